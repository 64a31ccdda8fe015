package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHost(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want Host
	}{
		{"example.com", Host{Name: "example.com"}},
		{"Example.COM.", Host{Name: "example.com"}},
		{"example.com:8080", Host{Name: "example.com", Port: 8080}},
		{"*.example.com", Host{Name: "*.example.com"}},
		{"*.Example.com:443", Host{Name: "*.example.com", Port: 443}},
		{"localhost", Host{Name: "localhost"}},
		{"my_host.internal:1", Host{Name: "my_host.internal", Port: 1}},
		{"127.0.0.1:8080", Host{Name: "127.0.0.1", Port: 8080}},
		{"10.1.2.3", Host{Name: "10.1.2.3"}},
		{"::1", Host{Name: "::1"}},
		{"[::1]:8080", Host{Name: "::1", Port: 8080}},
		{"[2001:DB8::1]:65535", Host{Name: "2001:db8::1", Port: 65535}},
		{"::ffff:127.0.0.1", Host{Name: "127.0.0.1"}},
		{"xn--bcher-kva.example", Host{Name: "xn--bcher-kva.example"}},
	} {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := ParseHost(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			again, err := ParseHost(got.String())
			if err != nil || again != got {
				t.Errorf("String %q reads back as %v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseHostRefuses(t *testing.T) {
	for _, tt := range []struct {
		raw, want string
	}{
		{"", "empty"},
		{"https://example.com", "not a host"},
		{"example.com/path", "not a host"},
		{"user@example.com", "not a host"},
		{"example.com:", "a port is missing"},
		{"example.com:0", "not a port"},
		{"example.com:65536", "not a port"},
		{"example.com:080", "not a port"},
		{"example.com:+80", "not a port"},
		{"example.com:http", "not a port"},
		{"*", "every host"},
		{"*.com", "top-level domain"},
		{"*.*.example.com", "only as the first label"},
		{"a*.example.com", "only as the first label"},
		{"*.10.0.0.1", "a * pattern over an address"},
		{"*.[::1]", "not allowed in a host name"},
		{"exa mple.com", "is not allowed in a host name"},
		{"bücher.example", "not ASCII"},
		{"a..b", "not a host name"},
		{".", "not a host name"},
		{"127.1", "dotted-quad"},
		{"0x7f000001", "dotted-quad"},
		{"2130706433:80", "dotted-quad"},
		{"[::1]", "a port is missing"},
		{"[::1]8080", "unexpected text after ]"},
		{"[::1:8080", "no closing ]"},
		{"[127.0.0.1]:80", "not an IPv6 address"},
		{"fe80::1%eth0", "zone"},
		{strings.Repeat("a", 64) + ".com", "not a host name"},
	} {
		t.Run(tt.raw, func(t *testing.T) {
			h, err := ParseHost(tt.raw)
			var fe *FlagError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, %v; want a *FlagError", h, err)
			}
			if fe.Flag != "--allow-net" || fe.Value != tt.raw || !strings.Contains(fe.Err, tt.want) || fe.Hint == "" {
				t.Errorf("got %+v, want --allow-net %q: ...%s... with a hint", fe, tt.raw, tt.want)
			}
		})
	}
}

func TestMatchHost(t *testing.T) {
	var hosts []Host
	for _, raw := range []string{"example.com", "api.example.org:8443", "*.example.net", "*.example.io:9000", "127.0.0.1:8080", "[::1]:8081"} {
		h, err := ParseHost(raw)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	for _, tt := range []struct {
		name string
		port int
		want string // the entry that allows it, as String gives it; empty if none
	}{
		{"example.com", 80, "example.com"},
		{"example.com", 443, "example.com"},
		{"EXAMPLE.com.", 443, "example.com"},
		{"example.com", 8080, ""},
		{"www.example.com", 443, ""},
		{"example.com.evil.test", 443, ""},
		{"api.example.org", 8443, "api.example.org:8443"},
		{"api.example.org", 443, ""},
		{"example.org", 8443, ""},
		{"a.example.net", 443, "*.example.net"},
		{"a.b.example.net", 80, "*.example.net"},
		{"example.net", 443, ""},
		{"badexample.net", 443, ""},
		{"a.example.net", 22, ""},
		{"x.example.io", 9000, "*.example.io:9000"},
		{"x.example.io", 443, ""},
		{"127.0.0.1", 8080, "127.0.0.1:8080"},
		{"127.0.0.1", 80, ""},
		{"::ffff:127.0.0.1", 8080, "127.0.0.1:8080"},
		{"127.1", 8080, ""},
		{"::1", 8081, "[::1]:8081"},
		{"0:0::1", 8081, "[::1]:8081"},
		{"localhost", 8080, ""},
		{"example.com", 0, ""},
		{"example.com", 70000, ""},
		{"", 80, ""},
	} {
		got, ok := MatchHost(hosts, tt.name, tt.port)
		if ok != (tt.want != "") || ok && got.String() != tt.want {
			t.Errorf("MatchHost(%q, %d): got %v %v, want %q", tt.name, tt.port, got, ok, tt.want)
		}
	}
}

// testPreset adds a preset @test for the length of the test.
func testPreset(t *testing.T) {
	presets["@test"] = []presetEntry{{"pkg.example", "packages"}, {"files.pkg.example", "their files"}}
	t.Cleanup(func() { delete(presets, "@test") })
}

// TestInternal: only a host the user listed by name may resolve to a
// private address; a pattern or a preset may not, even when the user also
// gave a pattern that covers the name.
func TestInternal(t *testing.T) {
	testPreset(t)
	hosts, err := parseAllowNet([]string{"@test", "*.pkg.example", "db.internal:5432", "*.corp.test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		port     int
		internal bool
	}{
		{"pkg.example", 443, false},
		{"files.pkg.example", 443, false},
		{"db.internal", 5432, true},
		{"x.corp.test", 443, false},
	} {
		h, ok := MatchHost(hosts, tt.name, tt.port)
		if !ok || h.Internal() != tt.internal {
			t.Errorf("%s:%d: got %+v %v, want internal=%v", tt.name, tt.port, h, ok, tt.internal)
		}
	}
	// The user lists a preset's host by hand: it is theirs.
	hosts, _ = parseAllowNet([]string{"@test", "pkg.example:443"})
	if h, _ := MatchHost(hosts, "pkg.example", 443); !h.Internal() || len(hosts) != 2 {
		t.Errorf("got %+v in %v, want the user's entry", h, hosts)
	}
}

func TestParseAllowNet(t *testing.T) {
	testPreset(t)
	got, err := parseAllowNet([]string{"example.com", "@test", "EXAMPLE.com", "example.com:443", "@test"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{
		{Name: "example.com"},
		{Name: "pkg.example", Port: 443, Preset: "@test"},
		{Name: "files.pkg.example", Port: 443, Preset: "@test"},
		{Name: "example.com", Port: 443},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_, err = parseAllowNet([]string{"@nmp"})
	var fe *FlagError
	if !errors.As(err, &fe) || fe.Err != "no such preset" || !strings.Contains(fe.Hint, "@npm") {
		t.Errorf("got %v, want no such preset and the list", err)
	}
}

// TestPresets: every preset host is a plain name on 443 with a reason, and
// the usage message names every preset.
func TestPresets(t *testing.T) {
	want := []string{"@crates", "@github", "@go", "@npm", "@pypi"}
	if diff := cmp.Diff(want, PresetNames()); diff != "" {
		t.Errorf("presets (-want +got):\n%s", diff)
	}
	for _, name := range PresetNames() {
		hosts, _ := presetHosts(name)
		if len(hosts) == 0 {
			t.Errorf("%s is empty", name)
		}
		for _, h := range hosts {
			if n, err := NormalHost(h.Name); err != nil || n != h.Name || h.Pattern() || h.Internal() || presetWhy(h) == "" {
				t.Errorf("%s: %+v is not a normal name with a reason (%v)", name, h, err)
			}
		}
		if _, err := ParseHost("x"); err != nil {
			t.Fatal(err)
		}
		_, err := ParseHost("")
		if fe := (*FlagError)(nil); !errors.As(err, &fe) || !strings.Contains(fe.Hint, name) {
			t.Errorf("the usage hint does not name %s: %v", name, err)
		}
	}
}

func TestNetworkFlags(t *testing.T) {
	ws := t.TempDir()
	_, err := New(Options{Workspace: ws, AllowNet: []string{"example.com"}, HostNetwork: true})
	var fe *FlagError
	if !errors.As(err, &fe) || fe.Flag != "--host-network" || fe.Hint == "" {
		t.Errorf("got %v, want --host-network refused with --allow-net", err)
	}
	_, err = New(Options{Workspace: ws, AllowNet: []string{"http://example.com"}})
	if !errors.As(err, &fe) || fe.Flag != "--allow-net" {
		t.Errorf("got %v, want --allow-net refused", err)
	}
}

func TestDescribeNetwork(t *testing.T) {
	testPreset(t)
	ws := t.TempDir()
	for _, tt := range []struct {
		name      string
		o         Options
		tool      string
		forPerson string
	}{
		{"none", Options{}, "No network: HTTP(S) gets 403 from the sandbox's proxy and other connections fail (the user can allow hosts with --allow-net).", "none: own network namespace, loopback only"},
		{"host", Options{HostNetwork: true}, "Network: the host's, open to every host and port (--host-network); host unix sockets stay hidden.", "the host's (--host-network)"},
		{
			"allow-list", Options{AllowNet: []string{"@test", "127.0.0.1:8080", "*.example.com"}},
			"Network: HTTP(S) only, through the proxy that HTTP_PROXY and HTTPS_PROXY name, to pkg.example:443 (@test), files.pkg.example:443 (@test), 127.0.0.1:8080, *.example.com (ports 80, 443); any other host gets 403 from the proxy, and connections that bypass it fail. Inside, localhost and 127.0.0.1 are the sandbox's own and skip the proxy (NO_PROXY): reach the host's listed ones through it anyway (curl --noproxy '').",
			"HTTP(S) through the server's proxy, to these only:\n" +
				"  pkg.example:443        @test: packages\n" +
				"  files.pkg.example:443  @test: their files\n" +
				"  127.0.0.1:8080         port 8080\n" +
				"  *.example.com          ports 80 and 443; every name below example.com, none resolving to a private address",
		},
		{
			"allow-list without loopback", Options{AllowNet: []string{"example.com"}},
			"Network: HTTP(S) only, through the proxy that HTTP_PROXY and HTTPS_PROXY name, to example.com (ports 80, 443); any other host gets 403 from the proxy, and connections that bypass it fail.",
			"HTTP(S) through the server's proxy, to these only:\n  example.com  ports 80 and 443",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Workspace = ws
			p, err := New(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if d := p.Describe(); !strings.Contains(d, "\n"+tt.tool+" ") {
				t.Errorf("tool description lacks %q:\n%s", tt.tool, d)
			}
			if d := p.DescribeNetwork(); !strings.HasPrefix(d, tt.forPerson) {
				t.Errorf("got %q, want it to start %q", d, tt.forPerson)
			}
		})
	}
}
