package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// The sandbox without namespaces (--without-namespaces), for machines that
// refuse them (Ubuntu's AppArmor restriction, a container's seccomp
// profile) when the user asks for it by name. It is built from what still
// works there:
//
//   - Landlock keeps writes to the writable paths and reads to an
//     allow-list of the system's trees: every entry of the root but the
//     home directories, /tmp, /var/tmp, /run, /dev (but for its few
//     devices), the server's state and the system's secrets, each left out
//     by granting what lies beside it (reducedRules). It scopes signals and
//     abstract unix sockets (ABI 6+), and, with the network off, TCP (ABI
//     4+); pathname unix sockets only beneath the writable paths (ABI 9+).
//   - seccomp holds the rest (filterOptions): no internet sockets when the
//     network is off, no unix sockets but stream pairs below ABI 9, no
//     truncate(2) below ABI 3, and the full sandbox's deny list (no new
//     namespaces, no ptrace, no mounts...).
//   - The command runs as the caller (a root caller is refused: its owner
//     checks would pass on root's files), with rlimits; RLIMIT_NPROC
//     counts the caller's other processes too, so it is set that many
//     above the limit.
//   - The helper is the command's subreaper, and kills every process the
//     call left when it ends (reducedhelper_linux.go); a delegated cgroup
//     v2, where there is one, holds the limits and kills too.
//   - TMPDIR names a directory made for each call and removed after it;
//     HOME is the private home, at its own path.
//
// What it cannot keep (policy.Unkept) the user gives up by name, or the
// server refuses to start; the tool's description says what is weaker.

// prepareReduced is prepare for the sandbox without namespaces.
func (s *linuxSandbox) prepareReduced() error {
	s.reduced = true
	s.uid, s.gid = os.Getuid(), os.Getgid()
	if s.uid == 0 {
		return rootWithoutNamespaces // New refuses it first
	}
	if s.pol.HostNetwork && s.caps.LandlockABI < 6 {
		return &Refusal{
			Cause: fmt.Sprintf("--host-network shares the host's network, where the host's abstract unix sockets are; only Landlock ABI 6 (Linux 6.12) keeps commands from them, and this kernel has ABI %d", s.caps.LandlockABI),
			Fix:   "drop --host-network, or use Linux 6.12 or later",
		}
	}
	s.env = s.pol.Env()
	if err := s.adoptCgroups(); err != nil {
		return err
	}
	if err := checkWritable(s.pol, s.uid, s.gid); err != nil {
		return err
	}
	rules, err := reducedRules(s.pol, hostFS{}, s.caps.LandlockABI)
	if err != nil {
		return err
	}
	s.landlock = rules
	s.filter = filterOptions{
		NoNetwork:    !s.pol.HostNetwork,
		NoUnixSocket: s.caps.LandlockABI < 9,
		NoTruncate:   s.caps.LandlockABI < 3,
	}
	return s.startGuard()
}

// reducedDevices are the devices a command without namespaces may write:
// not /dev/ptmx and /dev/pts, which are the host's and hold the caller's
// other terminals.
var reducedDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// reducedRules returns what Landlock grants a command without namespaces
// (see the top of this file), or refuses a writable grant that holds what
// must stay out of reach: Landlock cannot take access away below it.
func reducedRules(p *policy.Policy, fsys fsInfo, abi int) (landlockRules, error) {
	hidden := reducedHidden(p, fsys)
	var r landlockRules
	r.ReadOnly = readableTrees("/", hidden, fsys)
	r.ReadOnly = append(r.ReadOnly, "/dev/random", "/dev/urandom")
	r.Devices = append(r.Devices, reducedDevices...)
	for _, g := range p.Grants {
		// What a grant names is shown, hidden or not, as the user asked;
		// what must stay out of reach below it is not.
		var below []string
		for _, h := range hidden {
			if h != g.Path && policy.Within(h, g.Path) {
				below = append(below, h)
			}
		}
		if !g.Writable {
			r.ReadOnly = append(r.ReadOnly, readableTrees(g.Path, below, fsys)...)
			continue
		}
		for _, h := range below {
			if exists, _, _ := fsys.Lstat(h); exists {
				return r, &policy.FlagError{
					Flag: g.Flag, Value: g.Path,
					Err:  "holds " + h + ", which without namespaces cannot be kept out of reach inside a writable path (Landlock cannot take access away below a writable directory)",
					Hint: "grant narrower directories beside it, or run with namespaces",
				}
			}
		}
		r.Writable = append(r.Writable, g.Path)
	}
	if p.PrivateHome != "" {
		r.Writable = append(r.Writable, p.PrivateHome)
	}
	if p.HostNetwork {
		// The resolver's configuration may live in a hidden tree
		// (systemd-resolved's stub file in /run): shown, read-only, by its
		// own path.
		if target, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && target != "/etc/resolv.conf" {
			r.ReadOnly = append(r.ReadOnly, target)
		}
	}
	r.NoTCP = !p.HostNetwork && abi >= 4
	return r, nil
}

// reducedHidden lists what a command without namespaces must not read,
// resolved: the home directories (the caller's, /root, /home and each one
// in it) and the credentials in them, the private directories, /dev (its
// devices are granted one by one), the server's state (other workspaces'
// private homes) and the system's secrets.
func reducedHidden(p *policy.Policy, fsys fsInfo) []string {
	var out []string
	add := func(path string) {
		if path == "" || path == "/" {
			return
		}
		out = append(out, path)
		if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
			out = append(out, real)
		}
	}
	for _, h := range homeDirs(p, fsys) {
		add(h)
		for _, c := range policy.HomeCredentials(h, fsys.ReadDir) {
			add(c)
		}
	}
	add("/home")
	for _, d := range policy.PrivateDirs {
		add(d)
	}
	add("/dev")
	add(p.StateDir)
	for _, s := range policy.SystemSecrets {
		add(s)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// readableTrees returns the paths to grant read access beneath so that
// everything below root is readable but the hidden paths. A directory above
// a hidden path is not granted itself (Landlock would grant what lies below
// it too): its entries are, one by one, so it cannot be listed. Symbolic
// links are left out: what they lead to is readable where it lies.
func readableTrees(root string, hidden []string, fsys fsInfo) []string {
	isHidden := func(p string) bool {
		for _, h := range hidden {
			if policy.Within(p, h) {
				return true
			}
		}
		return false
	}
	above := func(p string) bool {
		for _, h := range hidden {
			if h != p && policy.Within(h, p) {
				return true
			}
		}
		return false
	}
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		for _, name := range fsys.ReadDir(dir) {
			p := filepath.Join(dir, name)
			exists, isDir, symlink := fsys.Lstat(p)
			switch {
			case !exists || symlink || isHidden(p):
			case isDir && above(p):
				walk(p)
			default:
				out = append(out, p)
			}
		}
	}
	switch {
	case isHidden(root):
	case above(root):
		walk(root)
	default:
		out = append(out, root)
	}
	return out
}

// callTmp makes the directory a call without namespaces gets as TMPDIR, in
// the policy's CallTmp: below the server's state, or else the system's
// temporary directory (hidden from commands, but for this one).
func (s *linuxSandbox) callTmp() (string, error) {
	parent := s.pol.CallTmp()
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", setupError("TMPDIR", err)
	}
	dir, err := os.MkdirTemp(parent, "call-")
	if err != nil {
		return "", setupError("TMPDIR", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", setupError("TMPDIR", err)
	}
	return real, nil
}

// removeTmp removes a call's TMPDIR once every process of the call is
// gone, directories it left unreadable included.
func removeTmp(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}

// withTmp returns env with TMPDIR set to tmp, and HOME too where it was
// /tmp (no private home), which a command without namespaces cannot reach.
func withTmp(env []string, tmp string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "TMPDIR="):
			kv = "TMPDIR=" + tmp
		case kv == "HOME=/tmp":
			kv = "HOME=" + tmp
		}
		out = append(out, kv)
	}
	return out
}
