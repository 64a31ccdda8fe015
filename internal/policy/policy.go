package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Defaults for the per-call bounds.
const (
	DefaultTimeout        = 50 * time.Second // below the 60 s request timeout most clients use
	DefaultMaxOutputBytes = 16 << 10         // per stream; two streams, twice over, stay far below 25k tokens
	DefaultMaxConcurrent  = 4
	// MaxMaxOutputBytes keeps a result under the TypeScript SDK's 10 MiB
	// message limit whatever the output: two streams, each in the structured
	// result and the text, each byte escaped to at most six (\u0000).
	MaxMaxOutputBytes = 256 << 10
	MaxMaxConcurrent  = 256
)

// Default resource limits: generous for builds and test suites, finite so
// that no command can take the machine down.
const (
	DefaultMemoryBytes  = 4 << 30
	DefaultMaxProcesses = 1024
	DefaultMaxFileBytes = 4 << 30
	DefaultTmpBytes     = 1 << 30
	DefaultCPUTime      = 10 * time.Minute
)

// Limits bounds what one command may use. A zero field means no limit,
// which only an explicit flag value of 0 asks for.
type Limits struct {
	MemoryBytes  int64         // the command's memory: all of it (cgroup) or each process's data (rlimit)
	MaxProcesses int           // processes and threads at once
	MaxFileBytes int64         // the largest file it may write
	TmpBytes     int64         // each private tmpfs: /tmp, /var/tmp, /run, /dev/shm
	CPUTime      time.Duration // CPU time of each process
	CPUs         float64       // CPU bandwidth in CPUs (cgroup v2 only)
}

// Options is what the person launching the server asked for, before any path
// is checked or resolved.
type Options struct {
	Workspace string
	ReadOnly  []string // --read-only, in flag order
	Writable  []string // --writable, in flag order
	Env       []string // --env NAME or NAME=VALUE
	// AllowNet holds the --allow-net values: HOST[:PORT], *.DOMAIN[:PORT]
	// or a preset (@npm). If empty, commands reach no host.
	AllowNet []string
	// HostNetwork shares the host's network with commands (--host-network).
	HostNetwork bool
	// WithoutNamespaces runs commands without the sandbox's namespaces
	// (--without-namespaces, Linux), where the machine refuses them;
	// Unprotected names the protections given up for it
	// (--without-protection), which must be every one in Unkept.
	WithoutNamespaces bool
	Unprotected       []string

	// Timeout is the wall-clock limit of one command. If zero, DefaultTimeout
	// applies; NoTimeout lifts it.
	Timeout        time.Duration
	NoTimeout      bool
	MaxOutputBytes int // per stream; if zero, DefaultMaxOutputBytes
	MaxConcurrent  int // if zero, DefaultMaxConcurrent
	// Limits are taken as they are: the command line supplies the defaults.
	Limits Limits

	// HostEnv is the server's own environment (os.Environ()). Only LANG,
	// LC_*, PATH and the names in Env are read from it.
	HostEnv []string
	// Home is the caller's home directory: hidden, and replaced by a private
	// one. If empty, no home is hidden beyond the credential masks.
	Home string
	// AccountHome is the home the user database names, when it is not
	// Home (HOME set elsewhere): the caller's shell still reads it at
	// login, so a writable grant may not contain it either. If empty, only
	// Home is checked.
	AccountHome string
	// StateDir holds the private homes (one per workspace). If empty, the
	// private home is not created and HOME points at /tmp.
	StateDir string
	// NoHomeTools keeps the home's tool directories hidden too
	// (--no-home-tools); by default those on PATH are shown read-only.
	NoHomeTools bool
	// User is the caller's login name, for USER and LOGNAME.
	User string
	// GitName and GitEmail are the caller's git identity, passed to commands
	// as GIT_AUTHOR_* and GIT_COMMITTER_*. Empty values are left out.
	GitName, GitEmail string
	// HostGit, if set, is the git the server runs on the host (--host-git),
	// in place of the one found on PATH in the system's places.
	HostGit string
	// GitIdentity, if set, reads the caller's git identity once the paths
	// are resolved, and replaces GitName and GitEmail: it is given the
	// workspace and the git the server may run ([Policy.HostProgram]),
	// "" if there is none.
	GitIdentity func(workspace, git string) (name, email string)
	// GlobalHooksPath, if set, returns the core.hooksPath of the caller's
	// global git config, absolute, or "": where it lies in the hidden
	// home, it is shown read-only, so that the hooks the user runs on
	// every commit (a secret scanner) run on the commits made inside.
	GlobalHooksPath func(workspace, git string) string
}

// Grant is one path the sandbox shows beyond the read-only host view.
type Grant struct {
	Path     string // absolute, symlinks resolved
	Writable bool
	Dir      bool // false for a single file
	Flag     string
}

// Policy is the checked, resolved form of Options. Its paths are absolute and
// free of symlinks as they were at start.
type Policy struct {
	Workspace string
	// Grants holds the workspace first, then --writable, then --read-only
	// paths, each once.
	Grants []Grant
	// Home is the caller's home directory; empty if there is none. It is
	// hidden unless HomeGranted.
	Home string
	// HomeGranted is set when a read-only grant covers Home (--read-only ~,
	// say): the user chose to show it, so it is neither hidden nor
	// replaced, and only the credential masks apply. (A writable grant
	// over Home is refused.)
	HomeGranted bool
	// AccountHome is the home the user database names, where HOME names
	// another: hidden too (but where a grant covers it); empty otherwise.
	AccountHome string
	// PrivateHome is the host directory mounted over Home inside the sandbox
	// so tool caches persist; empty if there is none.
	PrivateHome string
	// StateDir is where the server keeps its state (Options.StateDir),
	// absolute, symlinks resolved as far as it exists; empty if it keeps
	// none. Commands never see it: it holds every workspace's private
	// home. (A writable grant that contains it is refused.)
	StateDir string
	// EnclosingRepo is the top of the work tree of a git repository that
	// holds the workspace (the workspace is a package of a monorepo), when
	// the workspace has no repository of its own and that repository's
	// .git is not writable: git inside finds no repository it can use, or
	// one it cannot write. Empty otherwise.
	EnclosingRepo string
	// privateHomeMade is set when this start created PrivateHome.
	privateHomeMade bool
	// HomeTools lists what of the hidden home is shown again, read-only,
	// for the tools on PATH (also among Grants, with Flag "home tools").
	HomeTools []HomeTool

	// AllowNet is what commands may reach through the server's proxy, in
	// flag order with presets expanded, each destination once; if empty,
	// nothing.
	AllowNet []Host
	// HostNetwork is set when commands share the host's network; AllowNet
	// is then empty.
	HostNetwork bool
	// WithoutNamespaces is set when commands run without the sandbox's
	// namespaces, under Landlock, seccomp and rlimits only; Unprotected
	// then names the protections given up (Unkept). HOME is then the
	// private home at its own path, and TMPDIR a directory the sandbox
	// makes for each call.
	WithoutNamespaces bool
	Unprotected       []string

	Timeout        time.Duration // zero means none
	MaxOutputBytes int
	MaxConcurrent  int
	Limits         Limits

	env []string
	// GlobalHooks is the caller's global core.hooksPath, shown read-only
	// from the hidden home (Options.GlobalHooksPath); empty if none.
	GlobalHooks string
	// HostGit is the git the user named with --host-git, resolved; empty
	// if none.
	HostGit string
	// hostPath is the server's own PATH, where HostProgram looks.
	hostPath string
	// programs holds what HostProgram found (nil: it asks every time).
	programs *sync.Map
}

// FlagError is a problem with one command-line value, with a way forward.
type FlagError struct {
	Flag  string // "--workspace"
	Value string
	Err   string // what is wrong, lowercase
	Hint  string
}

func (e *FlagError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Flag, e.Err)
	}
	return fmt.Sprintf("%s %q: %s", e.Flag, e.Value, e.Err)
}

// New checks every option and resolves every path. The first problem is
// returned as a *FlagError; nothing is created on the way except the private
// home below StateDir.
func New(o Options) (*Policy, error) {
	p := &Policy{
		Timeout:        o.Timeout,
		MaxOutputBytes: o.MaxOutputBytes,
		MaxConcurrent:  o.MaxConcurrent,
		Limits:         o.Limits,
	}
	if err := checkLimits(o.Limits); err != nil {
		return nil, err
	}
	switch {
	case o.NoTimeout:
		p.Timeout = 0
	case o.Timeout == 0:
		p.Timeout = DefaultTimeout
	case o.Timeout < 0:
		return nil, &FlagError{Flag: "--timeout", Value: o.Timeout.String(), Err: "must be positive", Hint: "for example --timeout 30s"}
	}
	switch {
	case o.MaxOutputBytes == 0:
		p.MaxOutputBytes = DefaultMaxOutputBytes
	case o.MaxOutputBytes < 256 || o.MaxOutputBytes > MaxMaxOutputBytes:
		return nil, &FlagError{Flag: "--max-output", Value: FormatSize(int64(o.MaxOutputBytes)), Err: "out of range", Hint: "pass a size between 256B and 256KiB, for example --max-output 32KiB"}
	}
	switch {
	case o.MaxConcurrent == 0:
		p.MaxConcurrent = DefaultMaxConcurrent
	case o.MaxConcurrent < 1 || o.MaxConcurrent > MaxMaxConcurrent:
		return nil, &FlagError{Flag: "--max-concurrent", Value: fmt.Sprint(o.MaxConcurrent), Err: "out of range", Hint: fmt.Sprintf("pass a number from 1 to %d", MaxMaxConcurrent)}
	}

	allow, err := ParseNetwork(o.AllowNet, o.HostNetwork)
	if err != nil {
		return nil, err
	}
	p.AllowNet, p.HostNetwork = allow, o.HostNetwork

	if o.Workspace == "" {
		return nil, &FlagError{Flag: "--workspace", Err: "is required", Hint: "pass the project directory commands may work in, for example --workspace ."}
	}
	ws, dir, err := resolve("--workspace", o.Workspace)
	if err != nil {
		return nil, err
	}
	if !dir {
		return nil, &FlagError{Flag: "--workspace", Value: o.Workspace, Err: "not a directory", Hint: "pass a directory"}
	}
	if ws == "/" {
		return nil, &FlagError{Flag: "--workspace", Value: o.Workspace, Err: "the root directory cannot be the workspace", Hint: "pass a project directory; the rest of the system stays readable"}
	}
	p.Workspace = ws
	p.Grants = append(p.Grants, Grant{Path: ws, Writable: true, Dir: true, Flag: "--workspace"})

	seen := map[string]string{ws: "--workspace"}
	typed := map[string]string{ws: o.Workspace} // grant path -> as given
	add := func(flag string, raw []string, writable bool) error {
		for _, r := range raw {
			path, isDir, err := resolve(flag, r)
			if err != nil {
				return err
			}
			if path == "/" && writable {
				return &FlagError{Flag: flag, Value: r, Err: "the root directory cannot be writable", Hint: "grant the directories commands need, one --writable each"}
			}
			if prev, ok := seen[path]; ok {
				if prev == flag {
					continue
				}
				return &FlagError{Flag: flag, Value: r, Err: fmt.Sprintf("also given as %s", prev), Hint: "grant each path once, either --read-only or --writable"}
			}
			seen[path] = flag
			typed[path] = r
			p.Grants = append(p.Grants, Grant{Path: path, Writable: writable, Dir: isDir, Flag: flag})
		}
		return nil
	}
	if err := add("--writable", o.Writable, true); err != nil {
		return nil, err
	}
	if err := add("--read-only", o.ReadOnly, false); err != nil {
		return nil, err
	}
	if err := checkReduced(o, p); err != nil {
		return nil, err
	}
	// A grant given through a symbolic link that commands can re-point
	// would name another place at the next start.
	var writable []string
	for _, g := range p.Grants {
		if g.Writable {
			writable = append(writable, g.Path)
		}
	}
	if o.StateDir != "" {
		writable = append(writable, resolvePartly(o.StateDir))
	}
	// The system's places for programs are where the server takes the
	// programs it runs on the host (FindProgram): a server that let its
	// commands write there, as a root caller's through an idmapped grant
	// (root's files on the host), would hand every other server a program.
	for _, g := range p.Grants {
		if !g.Writable {
			continue
		}
		for _, prefix := range systemPrefixes {
			place := strings.TrimSuffix(prefix, "/")
			if Within(g.Path, place) || Within(place, g.Path) {
				return nil, &FlagError{Flag: g.Flag, Value: typed[g.Path], Err: "lies in " + place + ", where the server takes the programs it runs on the host", Hint: "pass a directory outside " + place}
			}
		}
	}
	for _, g := range p.Grants {
		abs, _ := filepath.Abs(typed[g.Path])
		if l := linkIn(abs, writable); l != "" {
			return nil, &FlagError{Flag: g.Flag, Value: typed[g.Path], Err: "goes through " + l + ", a symbolic link where commands write: they could point it elsewhere before the next start", Hint: "pass the place it leads to, " + g.Path + ", instead"}
		}
	}

	if o.Home != "" {
		if h, err := filepath.EvalSymlinks(o.Home); err == nil && h != "/" {
			if fi, err := os.Stat(h); err == nil && fi.IsDir() {
				p.Home = h
			}
		}
	}
	homes := []string{p.Home}
	if h, err := filepath.EvalSymlinks(o.AccountHome); o.AccountHome != "" && err == nil && h != p.Home && h != "/" {
		homes = append(homes, h)
		// HOME set elsewhere (a client's scratch HOME, a snap's): the
		// account's own home holds the user's files all the same, and
		// the state of their other servers. Hidden too, unless granted.
		granted := false
		for _, g := range p.Grants {
			granted = granted || Within(h, g.Path)
		}
		if !granted {
			p.AccountHome = h
		}
	}
	for _, g := range p.Grants {
		for _, h := range homes {
			if h != "" && g.Writable && Within(h, g.Path) {
				return nil, writableHome(g, typed[g.Path], h)
			}
		}
		if p.Home != "" && Within(p.Home, g.Path) {
			p.HomeGranted = true
		}
	}
	p.programs = new(sync.Map)
	for _, kv := range o.HostEnv {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p.hostPath = v
			break
		}
	}
	if p.Home != "" && !p.HomeGranted && !o.NoHomeTools {
		sd := ""
		if o.StateDir != "" {
			sd = resolvePartly(o.StateDir)
		}
		for _, t := range homeToolDirs(p.hostPath, p.Home, writable, sd) {
			covered := false
			for _, g := range p.Grants {
				if Within(t.Path, g.Path) {
					covered = true // shown already, as the user granted it
				}
			}
			if covered {
				continue
			}
			p.Grants = append(p.Grants, Grant{Path: t.Path, Dir: true, Flag: "home tools"})
			p.HomeTools = append(p.HomeTools, t)
		}
	}
	if p.Home != "" && !p.HomeGranted && o.StateDir != "" {
		ph, made, err := privateHome(o.StateDir, ws)
		if err != nil {
			return nil, err
		}
		p.PrivateHome, p.privateHomeMade = ph, made
		for _, g := range p.Grants {
			if g.Writable && Within(ph, g.Path) {
				p.Discard()
				return nil, &FlagError{Flag: g.Flag, Value: g.Path, Err: "contains the server's private home directory " + ph, Hint: "pass a narrower directory, or set XDG_CACHE_HOME outside it"}
			}
		}
	}
	if o.StateDir != "" {
		p.StateDir = resolvePartly(o.StateDir)
		// Commands would write every workspace's private home and the git
		// guard's journal (a --read-only home has no private home for the
		// check above to find).
		for _, g := range p.Grants {
			if g.Writable && Within(p.StateDir, g.Path) {
				p.Discard()
				return nil, &FlagError{Flag: g.Flag, Value: g.Path, Err: "contains the server's state directory " + p.StateDir + ", which holds every workspace's private home", Hint: "pass a narrower directory, or set XDG_CACHE_HOME outside it"}
			}
		}
	}
	p.EnclosingRepo = enclosingRepo(p)

	if o.HostGit != "" {
		if err := p.checkHostGit(o.HostGit); err != nil {
			p.Discard()
			return nil, err
		}
	}
	if o.GlobalHooksPath != nil && p.PrivateHome != "" {
		if h := o.GlobalHooksPath(p.Workspace, p.HostProgram("git")); h != "" && filepath.IsAbs(h) {
			if real, err := filepath.EvalSymlinks(h); err == nil && Within(real, p.Home) && p.Shows(h) {
				if fi, err := os.Stat(real); err == nil && fi.IsDir() {
					covered := false
					for _, g := range p.Grants {
						covered = covered || Within(real, g.Path)
					}
					if !covered {
						p.Grants = append(p.Grants, Grant{Path: real, Dir: true, Flag: "your global core.hooksPath"})
					}
					p.GlobalHooks = real
				}
			}
		}
	}
	if o.GitIdentity != nil {
		// Now that every path commands can write is known: the git
		// that reads it must lie outside them.
		o.GitName, o.GitEmail = o.GitIdentity(p.Workspace, p.HostProgram("git"))
	}
	env, err := buildEnv(o, p)
	if err != nil {
		p.Discard()
		return nil, err
	}
	if p.PrivateHome != "" {
		recordHome(p.PrivateHome, ws)
	}
	p.env = env
	return p, nil
}

// writableHome refuses a writable grant g (given as raw) that contains the
// home directory h. Commands could then write what the user's shell, git
// and desktop read and run later, outside any sandbox: ~/.bashrc,
// ~/.profile, ~/.gitconfig, ~/.local/bin, ~/.config/autostart, and more
// that no list would hold. Protecting those would be a deny-list, never
// complete (the reason the home is hidden rather than its secrets
// masked), so the grant is refused: a project inside the home, and
// --read-only for the home itself, give what such a grant was for.
func writableHome(g Grant, raw, h string) *FlagError {
	what := "is your home directory"
	if g.Path != h {
		what = "contains your home directory " + h
	}
	return &FlagError{
		Flag:  g.Flag,
		Value: raw,
		Err:   what + ": commands could write ~/.bashrc, ~/.profile, ~/.gitconfig and ~/.local/bin, which run outside the sandbox later",
		Hint:  "pass a project directory inside it (" + g.Flag + " " + filepath.Join(h, "project") + "), and --read-only " + h + " if commands must read the rest",
	}
}

func checkLimits(l Limits) error {
	switch {
	case l.MemoryBytes < 0 || l.MemoryBytes > 0 && l.MemoryBytes < 16<<20:
		return &FlagError{Flag: "--memory", Value: FormatSize(l.MemoryBytes), Err: "too small for any program", Hint: "pass 16MiB or more, for example --memory 2GiB, or 0 for no limit"}
	case l.MaxProcesses < 0 || l.MaxProcesses > 0 && l.MaxProcesses < 8:
		return &FlagError{Flag: "--max-processes", Value: fmt.Sprint(l.MaxProcesses), Err: "too small: a shell and its pipeline need several", Hint: "pass 8 or more, for example --max-processes 256, or 0 for no limit"}
	case l.MaxFileBytes < 0 || l.MaxFileBytes > 0 && l.MaxFileBytes < 1<<20:
		return &FlagError{Flag: "--max-file-size", Value: FormatSize(l.MaxFileBytes), Err: "too small", Hint: "pass 1MiB or more, or 0 for no limit"}
	case l.TmpBytes < 0 || l.TmpBytes > 0 && l.TmpBytes < 1<<20:
		return &FlagError{Flag: "--tmp-size", Value: FormatSize(l.TmpBytes), Err: "too small", Hint: "pass 1MiB or more, or 0 for no limit"}
	case l.CPUTime < 0 || l.CPUTime > 0 && l.CPUTime < time.Second:
		return &FlagError{Flag: "--cpu-time", Value: l.CPUTime.String(), Err: "too small", Hint: "pass 1s or more, or 0 for no limit"}
	case l.CPUs < 0 || l.CPUs > 0 && l.CPUs < 0.01:
		return &FlagError{Flag: "--cpus", Value: fmt.Sprint(l.CPUs), Err: "too small", Hint: "pass 0.01 or more, for example --cpus 1.5, or 0 for no limit"}
	}
	return nil
}

// resolve makes raw absolute and resolves its symlinks; it must exist.
func resolve(flag, raw string) (path string, isDir bool, err error) {
	if strings.ContainsRune(raw, 0) {
		return "", false, &FlagError{Flag: flag, Value: raw, Err: "contains a NUL byte", Hint: "pass a plain path"}
	}
	abs, err := filepath.Abs(raw)
	if err != nil {
		return "", false, &FlagError{Flag: flag, Value: raw, Err: err.Error(), Hint: "pass an absolute path"}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, &FlagError{Flag: flag, Value: raw, Err: "no such file or directory", Hint: "create it first, or pass an existing path"}
		}
		return "", false, &FlagError{Flag: flag, Value: raw, Err: unwrapPathError(err), Hint: "pass a path the server can read"}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", false, &FlagError{Flag: flag, Value: raw, Err: unwrapPathError(err), Hint: "pass a path the server can read"}
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return "", false, &FlagError{Flag: flag, Value: raw, Err: "neither a directory nor a regular file", Hint: "grant a directory or a regular file"}
	}
	return real, fi.IsDir(), nil
}

func unwrapPathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// privateHome returns (and creates, 0700) the directory that serves as HOME
// for commands run in workspace ws, and whether this call made it.
func privateHome(stateDir, ws string) (string, bool, error) {
	sum := sha256.Sum256([]byte(ws))
	name := filepath.Base(ws) + "-" + hex.EncodeToString(sum[:6])
	dir := filepath.Join(stateDir, "homes", name)
	_, statErr := os.Lstat(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, &FlagError{Flag: "--workspace", Value: ws, Err: "cannot create the private home " + dir + ": " + unwrapPathError(err), Hint: "set XDG_CACHE_HOME to a writable directory"}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", false, &FlagError{Flag: "--workspace", Value: ws, Err: "cannot resolve the private home " + dir + ": " + unwrapPathError(err), Hint: "set XDG_CACHE_HOME to a writable directory"}
	}
	return real, errors.Is(statErr, fs.ErrNotExist), nil
}

// resolvePartly returns path, made absolute, with symlinks resolved as far
// as it exists: the state directory may not be made yet.
func resolvePartly(path string) string {
	path, _ = filepath.Abs(path)
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(p) == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// Within reports whether path is dir or lies below it. Both must be clean
// absolute paths.
func Within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// Writable returns the writable grants, shortest path first.
func (p *Policy) Writable() []Grant {
	var out []Grant
	for _, g := range p.Grants {
		if g.Writable {
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Path) < len(out[j].Path) })
	return out
}

// SandboxHome is HOME as commands see it: the caller's home path (backed by
// the private home, or granted), or /tmp when there is none. Without
// namespaces nothing is mounted at the home's path: HOME is the private
// home at its own path, where there is one.
func (p *Policy) SandboxHome() string {
	if p.WithoutNamespaces && p.PrivateHome != "" {
		return p.PrivateHome
	}
	if p.Home != "" && (p.PrivateHome != "" || p.HomeGranted) {
		return p.Home
	}
	return "/tmp"
}

// CallTmp is the host directory in which each call gets a directory of its
// own as TMPDIR, which only that call can write: on macOS the system's
// temporary directory, and without namespaces the server's state (its tmp)
// or, where it keeps none, the system's. It is "" on Linux with
// namespaces, where a call's /tmp is a tmpfs of its own, on no host path.
func (p *Policy) CallTmp() string {
	switch {
	case runtime.GOOS == "darwin":
		return os.TempDir()
	case !p.WithoutNamespaces:
		return ""
	case p.StateDir != "":
		return filepath.Join(p.StateDir, "tmp")
	}
	return os.TempDir()
}

// Env returns the environment of every command, NAME=VALUE, sorted, with PWD
// and HOME set. The proxy's variables are not in it: the sandbox adds them
// ([ProxyEnv]), since it chooses where the proxy listens.
func (p *Policy) Env() []string { return append([]string(nil), p.env...) }

// enclosingRepo finds the nearest directory above the workspace that holds
// a .git (of any kind), when the workspace holds none and no writable grant
// covers that .git; "" otherwise.
func enclosingRepo(p *Policy) string {
	if _, err := os.Lstat(filepath.Join(p.Workspace, ".git")); err == nil {
		return ""
	}
	for d := filepath.Dir(p.Workspace); ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		if _, err := os.Lstat(dotgit); err == nil {
			for _, g := range p.Grants {
				if g.Writable && Within(dotgit, g.Path) {
					return ""
				}
			}
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}
