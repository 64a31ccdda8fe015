package gitguard

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// A repository a call made as a partial clone whose HEAD's tree is
// missing: when its index is moved aside, the guard's git read-tree HEAD
// would fetch the tree from the promisor remote, from the host, at a URL
// the command chose (from the eleventh git red-team round). No connection
// is made.
func TestRebuildIndexFetchesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	f := newFixture(t)
	f.sh("git init -q && echo a > a && git add a && git commit -qm one")
	f.start()
	c, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	f.sh(`git config core.repositoryformatversion 1 && git config extensions.partialClone origin &&
git config remote.origin.url "http://` + ln.Addr().String() + `/exfil-data" && git config remote.origin.promisor true &&
t=0123456789abcdef0123456789abcdef01234567 &&
c=$(printf "tree $t\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\nx\n" | git hash-object -t commit --literally -w --stdin) &&
git update-ref HEAD $c`)
	plantIndexHook(t, f, ".")
	notes := c.End()
	if n := conns.Load(); n != 0 {
		t.Errorf("the guard's git connected to the promisor remote %d times (notes %q)", n, notes)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "aside") {
		t.Errorf("notes %q, want the repository or its index moved aside", notes)
	}
}
