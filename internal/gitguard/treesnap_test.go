package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A repository with a tracked core.hooksPath: once its ref files are a
// second old, an idle call runs no git at all (what git said is kept with
// the files it read), and each way a call can change what git would say,
// in place too with the same size, is still seen and put back.
func TestTreeSnapsKeptWhileFilesAre(t *testing.T) {
	const hook = `b=$(printf '#!/bin/sh\n%s\n' "$PWN" | git hash-object -w --stdin) && git update-index --cacheinfo 100755,$b,.husky/pre-commit &&
t=$(git write-tree) && c=$(git commit-tree -p HEAD -m x $t) && git read-tree HEAD && `
	for _, tt := range []struct{ name, attack, note string }{
		{"a branch rewritten in place, the same size", hook + `chmod u+w .git/refs/heads/main; printf '%s\n' $c > .git/refs/heads/main`, "put"},
		{"packed-refs rewritten in place", hook + `git pack-refs --all && printf '%s refs/heads/main\n' $c > .git/packed-refs && git update-ref -d refs/heads/main 2>/dev/null; printf '%s refs/heads/main\n' $c > .git/packed-refs`, "put"},
		{"a new tag", hook + `git tag v9 $c`, "put"},
		{"ORIG_HEAD written in place", hook + `echo $c > .git/ORIG_HEAD`, "put"},
		{"the index", `b=$(printf '#!/bin/sh\n%s\n' "$PWN" | git hash-object -w --stdin) && git update-index --cacheinfo 100755,$b,.husky/pre-commit`, "index entries back"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.sh(huskyRepo)
			// The host's git, through a script that counts its runs.
			count := filepath.Join(t.TempDir(), "runs")
			wrap := filepath.Join(t.TempDir(), "git")
			if err := os.WriteFile(wrap, []byte("#!/bin/sh\necho x \"$*\" >> "+count+"\nexec "+f.git+" \"$@\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			f.cfg.Git = wrap
			f.start()
			time.Sleep(1100 * time.Millisecond)
			runs := func() int {
				b, _ := os.ReadFile(count)
				return strings.Count(string(b), "x")
			}
			f.call("") // takes and keeps what git says
			before := runs()
			if notes := f.call(""); len(notes) != 0 {
				t.Fatalf("an idle call noted %q", notes)
			}
			if n := runs() - before; n != 0 {
				b, _ := os.ReadFile(count)
				t.Logf("runs:\n%s", b)
				t.Errorf("an idle call ran git %d times, want 0", n)
			}
			notes := f.call(tt.attack)
			if !strings.Contains(strings.Join(notes, "\n"), tt.note) {
				t.Errorf("notes %q, want one containing %q", notes, tt.note)
			}
			if f.userCheckout() {
				t.Errorf("the user's git ran the planted hook; notes %q", notes)
			}
		})
	}
}
