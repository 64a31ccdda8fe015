package main

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// platformsFile is the one platform table. The npm launcher reads it at
// run time (so it ships inside the launcher), and the stager, the wheel
// builder and the release checks read it too; what cannot read it is
// checked against it here.
const platformsFile = "npm/nanosandbox-mcp/lib/platforms.json"

type platform struct {
	GOOS      string   `json:"goos"`
	GOARCH    string   `json:"goarch"`
	NpmOS     string   `json:"npm_os"`
	NpmCPU    string   `json:"npm_cpu"`
	WheelTags []string `json:"wheel_tags"`
}

func readPlatforms(t *testing.T) []platform {
	t.Helper()
	b, err := os.ReadFile(platformsFile)
	if err != nil {
		t.Fatal(err)
	}
	var ps []platform
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatalf("%s: %v", platformsFile, err)
	}
	return ps
}

// TestPlatformTable checks the table itself: every row complete, no
// platform twice, and npm's names for Go's.
func TestPlatformTable(t *testing.T) {
	ps := readPlatforms(t)
	if len(ps) == 0 {
		t.Fatalf("%s lists no platform", platformsFile)
	}
	npmOS := map[string]string{"linux": "linux", "darwin": "darwin"}
	npmCPU := map[string]string{"amd64": "x64", "arm64": "arm64"}
	seen := map[string]bool{}
	for _, p := range ps {
		key := p.GOOS + "/" + p.GOARCH
		if seen[key] {
			t.Errorf("%s is listed twice", key)
		}
		seen[key] = true
		if p.NpmOS != npmOS[p.GOOS] || p.NpmCPU != npmCPU[p.GOARCH] {
			t.Errorf("%s: npm os/cpu %s/%s, want %s/%s", key, p.NpmOS, p.NpmCPU, npmOS[p.GOOS], npmCPU[p.GOARCH])
		}
		if len(p.WheelTags) == 0 {
			t.Errorf("%s: no wheel tags", key)
		}
	}
}

// TestGoReleaserBuildsThePlatforms compares the table with what
// .goreleaser.yaml builds: every goos with every goarch.
func TestGoReleaserBuildsThePlatforms(t *testing.T) {
	f, err := os.Open(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lists := map[string][]string{}
	var in string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "goos:" || line == "goarch:":
			in = strings.TrimSuffix(line, ":")
		case in != "" && strings.HasPrefix(line, "- "):
			lists[in] = append(lists[in], strings.TrimSpace(strings.TrimPrefix(line, "- ")))
		default:
			in = ""
		}
	}
	var built []string
	for _, goos := range lists["goos"] {
		for _, goarch := range lists["goarch"] {
			built = append(built, goos+"/"+goarch)
		}
	}
	var want []string
	for _, p := range readPlatforms(t) {
		want = append(want, p.GOOS+"/"+p.GOARCH)
	}
	slices.Sort(built)
	slices.Sort(want)
	if !slices.Equal(built, want) {
		t.Errorf(".goreleaser.yaml builds %q; %s lists %q", built, platformsFile, want)
	}
}

// TestLauncherDependsOnThePlatforms compares the table with the launcher's
// optional dependencies, one package per platform.
func TestLauncherDependsOnThePlatforms(t *testing.T) {
	b, err := os.ReadFile("npm/nanosandbox-mcp/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name                 string            `json:"name"`
		OptionalDependencies map[string]string `json:"optionalDependencies"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for name := range m.OptionalDependencies {
		got = append(got, name)
	}
	for _, p := range readPlatforms(t) {
		want = append(want, m.Name+"-"+p.NpmOS+"-"+p.NpmCPU)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("npm/nanosandbox-mcp/package.json depends on %q; %s gives %q", got, platformsFile, want)
	}
}
