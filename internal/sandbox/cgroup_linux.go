package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

const cgroupRoot = "/sys/fs/cgroup"

// serverLeaf is where the server and whatever shared its cgroup move, so
// that the delegated cgroup holds no process itself and may hand
// controllers down (cgroup v2's "no internal processes" rule).
const serverLeaf = "nanosandbox-server"

// probeCgroup finds the server's own cgroup, if it is a delegated cgroup v2
// subtree the server may write, with the memory and pids controllers.
func probeCgroup() (dir string, cpu bool, why string) {
	var st unix.Statfs_t
	if err := unix.Statfs(cgroupRoot, &st); err != nil {
		return "", false, "no " + cgroupRoot
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return "", false, "this machine has cgroup v1 (or a v1/v2 hybrid)"
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, "cannot read /proc/self/cgroup"
	}
	rel := ""
	for _, line := range strings.Split(string(b), "\n") {
		if r, ok := strings.CutPrefix(line, "0::"); ok {
			rel = r
		}
	}
	if rel == "" {
		return "", false, "this process is in no cgroup v2"
	}
	dir = filepath.Join(cgroupRoot, rel)
	if filepath.Base(dir) == serverLeaf {
		dir = filepath.Dir(dir) // adopted already, by an earlier start of this process's parent tree
	}
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		if unix.Access(filepath.Join(dir, f), unix.W_OK) != nil {
			return "", false, "the server's cgroup " + rel + " is not delegated to it (not writable)"
		}
	}
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return "", false, "cannot read " + filepath.Join(dir, "cgroup.controllers")
	}
	have := strings.Fields(string(ctl))
	for _, c := range []string{"memory", "pids"} {
		if !contains(have, c) {
			return "", false, "the delegated cgroup " + rel + " lacks the " + c + " controller"
		}
	}
	return dir, contains(have, "cpu"), ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cgroupTree is the delegated subtree commands get their cgroups in.
type cgroupTree struct {
	base string
	seq  atomic.Uint64
}

// adoptCgroup moves every process of base into a leaf, then enables the
// controllers for base's children.
func adoptCgroup(base string, cpu bool) (*cgroupTree, error) {
	leaf := filepath.Join(base, serverLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("mkdir %s: %w", leaf, unwrap(err))
	}
	b, err := os.ReadFile(filepath.Join(base, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("read %s/cgroup.procs: %w", base, unwrap(err))
	}
	for _, pid := range strings.Fields(string(b)) {
		err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(pid), 0)
		if err != nil && !errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("move process %s into %s: %w", pid, leaf, unwrap(err))
		}
	}
	ctl := "+memory +pids"
	if cpu {
		ctl += " +cpu"
	}
	if err := os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte(ctl), 0); err != nil {
		return nil, fmt.Errorf("write %q to %s/cgroup.subtree_control: %w", ctl, base, unwrap(err))
	}
	removeStaleCgroups(base)
	return &cgroupTree{base: base}, nil
}

// removeStaleCgroups removes the command cgroups of servers that are gone
// (killed before they could remove them). Only empty ones can be removed,
// and only those named after a process that no longer exists are tried.
func removeStaleCgroups(base string) {
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		var pid, n int
		if !e.IsDir() {
			continue
		}
		if _, err := fmt.Sscanf(e.Name(), "cmd-%d-%d", &pid, &n); err != nil || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			unix.Rmdir(filepath.Join(base, e.Name()))
		}
	}
}

// cmdCgroup is one command's cgroup.
type cmdCgroup struct {
	dir string
	fd  int // the directory, for CLONE_INTO_CGROUP
}

// create makes the cgroup of one command with the limits held by cgroup.
func (t *cgroupTree) create(l policy.Limits, m Mechanisms) (*cmdCgroup, error) {
	dir := filepath.Join(t.base, fmt.Sprintf("cmd-%d-%d", os.Getpid(), t.seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("mkdir %s: %w", dir, unwrap(err))
	}
	c := &cmdCgroup{dir: dir, fd: -1}
	set := func(file, value string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
			return fmt.Errorf("write %s %q: %w", file, value, unwrap(err))
		}
		return nil
	}
	var err error
	if m.Memory == "cgroup" {
		err = errors.Join(set("memory.max", strconv.FormatInt(l.MemoryBytes, 10)), set("memory.oom.group", "1"))
		if _, serr := os.Stat(filepath.Join(dir, "memory.swap.max")); serr == nil {
			err = errors.Join(err, set("memory.swap.max", "0"))
		}
	}
	if err == nil && m.Processes == "cgroup" {
		err = set("pids.max", strconv.Itoa(l.MaxProcesses))
	}
	if err == nil && m.CPUs == "cgroup" {
		const period = 100000
		err = set("cpu.max", fmt.Sprintf("%d %d", int64(l.CPUs*period), period))
	}
	if err == nil {
		c.fd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// cgroupOutcome is what a command's cgroup says about how it ended.
type cgroupOutcome struct {
	oomKilled  bool
	pidsAtMax  bool
	memoryPeak int64
}

// finish kills whatever is left, reads what the cgroup recorded, and
// removes it.
func (c *cmdCgroup) finish() cgroupOutcome {
	var o cgroupOutcome
	read := func(file string) map[string]int64 {
		out := map[string]int64{}
		b, _ := os.ReadFile(filepath.Join(c.dir, file))
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, " ")
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); ok && err == nil {
				out[k] = n
			}
		}
		return out
	}
	o.oomKilled = read("memory.events")["oom_kill"] > 0
	o.pidsAtMax = read("pids.events")["max"] > 0
	if b, err := os.ReadFile(filepath.Join(c.dir, "memory.peak")); err == nil {
		o.memoryPeak, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	c.remove()
	return o
}

// remove kills every process left in the cgroup and removes it.
func (c *cmdCgroup) remove() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
	for i := 0; i < 100; i++ {
		err := unix.Rmdir(c.dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		time.Sleep(10 * time.Millisecond) // EBUSY while the killed processes exit
	}
}
