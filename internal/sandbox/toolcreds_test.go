package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// TestPlanMasksToolCredentials: inside the tool managers' trees the home
// tools show, npm's global config of each Node prefix is masked, and one
// of a Node installed after the start (npm login --location=global with
// it) is masked from the next call on.
func TestPlanMasksToolCredentials(t *testing.T) {
	fs := newFakeFS("/tmp/", "/home/u/ws/", "/home/u/.npm-global/bin/tool", "/home/u/.npm-global/etc/npmrc",
		"/home/u/.nvm/versions/node/v20.1.0/bin/node", "/home/u/.nvm/versions/node/v20.1.0/etc/npmrc",
		"/home/u/.nvm/versions/node/v18.0.0/bin/node")
	p := &policy.Policy{
		Workspace: "/home/u/ws",
		Home:      "/home/u",
		Grants: []policy.Grant{
			{Path: "/home/u/ws", Writable: true, Dir: true},
			{Path: "/home/u/.npm-global", Dir: true, Flag: "home tools"},
			{Path: "/home/u/.nvm", Dir: true, Flag: "home tools"},
		},
	}
	masks := func(ops []mountOp) []string {
		var out []string
		for _, o := range ops {
			if o.Kind == opMask || o.Kind == opHide && o.Path != p.Home {
				out = append(out, opString(o))
			}
		}
		return out
	}
	sp := planStatic(p, fs)
	want := []string{"mask /home/u/.npm-global/etc/npmrc", "mask /home/u/.nvm/versions/node/v20.1.0/etc/npmrc"}
	if diff := cmp.Diff(want, masks(planCall(p, sp, nil, fs))); diff != "" {
		t.Errorf("masks at the start (-want +got):\n%s", diff)
	}

	fs.add("/home/u/.nvm/versions/node/v18.0.0/etc/npmrc") // a version there at the start
	fs.add("/home/u/.nvm/versions/node/v22.0.0/etc/npmrc") // one installed since
	want = []string{"mask /home/u/.npm-global/etc/npmrc", "mask /home/u/.nvm/versions/node/v18.0.0/etc/npmrc",
		"mask /home/u/.nvm/versions/node/v20.1.0/etc/npmrc", "mask /home/u/.nvm/versions/node/v22.0.0/etc/npmrc"}
	if diff := cmp.Diff(want, masks(planCall(p, *sp.current(p, fs), nil, fs))); diff != "" {
		t.Errorf("masks after npmrc files appeared (-want +got):\n%s", diff)
	}
}
