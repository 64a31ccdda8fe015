package policy

import "strings"

// presets are the groups of hosts --allow-net @NAME stands for: what agents
// fetch most, each host on port 443 only, and none of them allowed to
// resolve to a loopback, link-local or private address (Host.Internal).
// Keep each to the hosts its tools need by default, with the reason; a
// mirror or a company registry is listed by its own --allow-net.
var presets = map[string][]presetEntry{
	"@npm": {
		{"registry.npmjs.org", "package metadata and tarballs for npm, pnpm and bun"},
		{"registry.yarnpkg.com", "the same registry under the name yarn uses by default"},
	},
	"@pypi": {
		{"pypi.org", "the package index (simple and JSON APIs) for pip, uv and poetry"},
		{"files.pythonhosted.org", "the wheels and sdists the index links to"},
	},
	"@go": {
		{"proxy.golang.org", "the module proxy GOPROXY names by default, and toolchain downloads"},
		{"sum.golang.org", "the checksum database GOSUMDB names by default"},
	},
	"@crates": {
		{"index.crates.io", "cargo's sparse registry index"},
		{"static.crates.io", "the crate files the index points to"},
		{"crates.io", "the web API of cargo search, publish and owner"},
	},
	"@github": {
		{"github.com", "git clone, fetch and push over HTTPS; release and archive links"},
		{"codeload.github.com", "where archive (tarball, zipball) links redirect"},
		{"objects.githubusercontent.com", "where release asset links redirect"},
		{"release-assets.githubusercontent.com", "where release asset links redirect (newer releases)"},
	},
}

type presetEntry struct{ host, why string }

// presetWhy returns why h's preset lists it.
func presetWhy(h Host) string {
	for _, e := range presets[h.Preset] {
		if e.host == h.Name {
			return e.why
		}
	}
	return ""
}

// PresetFor returns the preset ("@github") that lists host, on port 443,
// or "" if none does: a host refused for not being allowed is best allowed
// with its preset, which names the other hosts its tools go on to (git
// clone from github.com fetches archives from codeload.github.com).
func PresetFor(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, name := range PresetNames() {
		for _, e := range presets[name] {
			if e.host == host {
				return name
			}
		}
	}
	return ""
}
