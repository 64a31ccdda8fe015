package gitguard

import "testing"

// TestPackageRisk: a package.json gives the project a program npx would
// run for nanosandbox-mcp however it spells the name; one that does not
// stays.
func TestPackageRisk(t *testing.T) {
	for _, tt := range []struct {
		json string
		risk bool
	}{
		{`{"name":"app","version":"1.0.0","dependencies":{"left-pad":"^1.3.0"},"scripts":{"test":"jest"}}`, false},
		{`{"name":"nanosandbox-mcp","bin":"x.js"}`, true},
		{`{"name":"app","bin":{"nanosandbox-mcp":"x.js"}}`, true},
		{`{"name":"app","bin":{"a/nanosandbox-mcp":"x.js"}}`, true},
		{`{"name":"app","bin":{"nanosandbox\u002dmcp":"x.js"}}`, true},
		{`{"name":"app","bin":{"NanoSandbox-MCP":"x.js"}}`, true},
		{"\xef\xbb\xbf" + `{"name":"nanosandbox-mcp"}`, true},
		{`{"name":"nanosandbox-mcp","name":"app"}`, true},
		{`{"name":"app","directories":{"bin":"tools"}}`, true},
		// Any directories key is taken for one that may give a bin: a
		// reader other than npm's cannot be sure which of two keys wins.
		{`{"name":"app","directories":{"lib":"lib"}}`, true},
		{`{"name":"app", not json`, false},
		{`{"name":"app","directories":{"bin":"evil"},"Directories":null}`, true},
		{`{"name":"app","bin":{"nanosandbox-mcp":"x.js"},"Directories":1}`, true},
		{`{"name":"app","DIRECTORIES":{"bin":"tools"}}`, true},
	} {
		if got := packageRisk([]byte(tt.json)) != ""; got != tt.risk {
			t.Errorf("packageRisk(%s) = %v, want %v", tt.json, got, tt.risk)
		}
	}
}

// TestNpmrcRisk: only settings that run nothing and lead nowhere, in the
// plain spelling, stay.
func TestNpmrcRisk(t *testing.T) {
	for _, tt := range []struct {
		npmrc string
		risk  bool
	}{
		{"save-exact=true\nengine-strict = true\n; a comment\n# another\n\nlegacy-peer-deps=true\n", false},
		{"node-options=--require /ws/x.js\n", true},
		{"registry=https://example.com/\n", true},
		{"@scope:registry=https://example.com/\n", true},
		{"\"node-options\"=--require x\n", true},
		{"[section]\nsave-exact=true\n", true},
		{"Node-Options=--require x\n", true},
		{"save-exact=true\nscript-shell=/ws/sh\n", true},
		{"\ufeffsave-exact=true\n", false},
		{"save-exact=true\rnode-options=--require x\rregistry=http://x/\n", true},
		{"save-exact=true\r\nengine-strict=true\r\n", false},
		{"save-exact=true\x0bnode-options=x\n", true},
		{"prefix=/ws/p\n", true},
		{"//registry.example.com/:_authToken=x\n", true},
	} {
		if got := npmrcRisk([]byte(tt.npmrc)) != ""; got != tt.risk {
			t.Errorf("npmrcRisk(%q) = %v, want %v", tt.npmrc, got, tt.risk)
		}
	}
}
