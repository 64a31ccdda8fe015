package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// checkWritable refuses a writable grant that commands could not write:
// otherwise it fails only once a command tries, or when the server first
// creates something there for a call, and in MCP mode that reads as a
// broken server. Commands run as uid and gid (DESIGN.md §3) with no
// capabilities: a root caller's commands pass no check on root's behalf,
// so for root the mode bits decide (ACLs aside); for anyone else the
// kernel's own access(2) does.
func checkWritable(p *policy.Policy, uid, gid int) error {
	for _, g := range p.Writable() {
		want := uint32(unix.W_OK)
		if g.Dir {
			want |= unix.X_OK
		}
		why, hint := "", ""
		err := unix.Access(g.Path, want)
		switch {
		case errors.Is(err, unix.EROFS):
			why, hint = "it is on a read-only filesystem", "pass a path on a writable filesystem"
		case err != nil:
			why, hint = fmt.Sprintf("you (uid %d) may not write it: %v", uid, err), "make it writable for you (chmod u+w "+g.Path+"), or pass one you can write"
		case uid == 0:
			ok, owner, mode := modeAllows(g.Path, uid, gid, want)
			switch {
			case ok:
			case owner == 0:
				why = fmt.Sprintf("its mode %04o does not let its owner, root, write it, and commands run without the capabilities that would override that", mode)
				hint = "make it writable (chmod u+w " + g.Path + ")"
			default:
				why = fmt.Sprintf("it belongs to uid %d (mode %04o), and commands run without the capabilities that would let root override that", owner, mode)
				hint = fmt.Sprintf("run the server as uid %d, its owner, or chown it to root (chown root %s)", owner, g.Path)
			}
		}
		if why == "" {
			continue
		}
		if g.Flag == "--writable" {
			hint += ", or grant it with --read-only if commands only read it"
		}
		return &policy.FlagError{Flag: g.Flag, Value: g.Path, Err: "commands cannot write it: " + why, Hint: hint}
	}
	return nil
}

// modeAllows reports whether the mode bits of path grant want (W_OK, X_OK)
// to uid, gid and this process's supplementary groups, as they do to a
// process without capabilities; with the owner and mode, for the message.
// A root caller's commands run as their own uid with no supplementary
// groups, through mounts that map root's files to them
// (rootcaller_linux.go): only root's own uid and gid count then.
func modeAllows(path string, uid, gid int, want uint32) (ok bool, owner uint32, mode uint32) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false, 0, 0
	}
	var groups []int
	if uid != 0 {
		groups, _ = os.Getgroups()
	}
	perm := st.Mode & 0o7
	switch {
	case int(st.Uid) == uid:
		perm = st.Mode >> 6 & 0o7
	case int(st.Gid) == gid || slices.Contains(groups, int(st.Gid)):
		perm = st.Mode >> 3 & 0o7
	}
	return perm&want == want, st.Uid, st.Mode & 0o7777
}
