package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/dbus"
)

// scopeTimeout bounds the request for a scope, the wait for its job
// included: a manager that does not answer delays the start this long.
const scopeTimeout = 5 * time.Second

// systemd's D-Bus names.
const (
	systemdName    = "org.freedesktop.systemd1"
	systemdPath    = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdManager = "org.freedesktop.systemd1.Manager"
	jobRemovedRule = "type='signal',sender='org.freedesktop.systemd1',path='/org/freedesktop/systemd1',interface='org.freedesktop.systemd1.Manager',member='JobRemoved'"
)

// JoinScope gives the server a delegated cgroup v2 of its own where the
// probe found none, so that limits hold per command and count what
// RLIMIT_DATA does not (shared memory, tmpfs files, the page cache, kernel
// memory). It asks systemd, as systemd-run --user --scope -p Delegate=yes
// does, for a transient unit nanosandbox-mcp-PID.scope that holds this
// process, with Delegate=yes, waits for the job, and probes again. caps
// come back with the new cgroup, or with CgroupWhy saying what was tried;
// either way the existing code takes it from there (adoptCgroup, or
// rlimits).
//
// A regular caller asks its user manager: on the session bus, or on the
// manager's own socket where no bus runs. Root asks the system manager (the
// system bus, then its own socket), never a user's: the user owns every
// cgroup below their manager, and could freeze, kill or re-limit a root
// server's commands. Nothing is asked on cgroup v1 or a hybrid, where a
// scope brings no v2 controllers, nor when the server's own cgroup sets a
// memory limit, which moving out would escape.
func JoinScope(caps Capabilities) Capabilities {
	if caps.Cgroup != "" || !cgroup2Mounted() {
		return caps
	}
	if limit := ownMemoryLimit(); limit != "" {
		caps.CgroupWhy += "; it stays there, since that cgroup sets " + limit + ", which a systemd scope of its own would escape"
		return caps
	}
	m := managerFor(os.Getuid(), os.Getenv)
	unit := fmt.Sprintf("nanosandbox-mcp-%d.scope", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), scopeTimeout)
	defer cancel()
	if err := m.startScope(ctx, unit, os.Getpid()); err != nil {
		caps.CgroupWhy += "; the systemd " + m.name + " gave it no scope of its own: " + err.Error()
		return caps
	}
	dir, cpu, why := probeCgroup()
	if why != "" {
		caps.CgroupWhy = fmt.Sprintf("in %s, which the systemd %s started for it, %s", unit, m.name, why)
		return caps
	}
	caps.Cgroup, caps.CgroupCPU, caps.CgroupWhy = dir, cpu, ""
	caps.CgroupScope = "the systemd " + m.name
	return caps
}

func cgroup2Mounted() bool {
	var st unix.Statfs_t
	return unix.Statfs(cgroupRoot, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// ownMemoryLimit names the memory limit the server's own cgroup sets
// ("memory.max 2147483648"), or is empty.
func ownMemoryLimit() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		rel, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		for _, f := range []string{"memory.max", "memory.high"} {
			v, err := os.ReadFile(filepath.Join(cgroupRoot, rel, f))
			if s := strings.TrimSpace(string(v)); err == nil && s != "max" {
				return f + " " + s
			}
		}
	}
	return ""
}

// manager is a systemd manager and where it may be asked.
type manager struct {
	name  string    // "user manager", "system manager"
	addrs []busAddr // tried in order until one takes the request
}

type busAddr struct {
	addr string // a D-Bus address
	bus  bool   // a bus (Hello, AddMatch); else the manager itself
}

// managerFor returns the manager of a caller with uid, from its
// environment: the bus first, the documented way, and the socket systemctl
// uses where no bus runs.
func managerFor(uid int, getenv func(string) string) manager {
	if uid == 0 {
		system := getenv("DBUS_SYSTEM_BUS_ADDRESS")
		if system == "" {
			system = dbus.UnixAddress("/run/dbus/system_bus_socket")
		}
		return manager{"system manager", []busAddr{{system, true}, {dbus.UnixAddress("/run/systemd/private"), false}}}
	}
	run := getenv("XDG_RUNTIME_DIR")
	if run == "" {
		run = fmt.Sprintf("/run/user/%d", uid) // where pam_systemd puts it
	}
	var addrs []busAddr
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		addrs = append(addrs, busAddr{a, true})
	}
	if a := dbus.UnixAddress(filepath.Join(run, "bus")); len(addrs) == 0 || addrs[0].addr != a {
		addrs = append(addrs, busAddr{a, true})
	}
	addrs = append(addrs, busAddr{dbus.UnixAddress(filepath.Join(run, "systemd", "private")), false})
	return manager{"user manager", addrs}
}

// startScope asks m for unit holding pid, at each address until one takes
// the request, and waits for the job.
func (m manager) startScope(ctx context.Context, unit string, pid int) error {
	var errs []string
	for _, a := range m.addrs {
		err := requestScope(ctx, a, unit, pid)
		if err == nil {
			return nil
		}
		errs = append(errs, err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return errors.New(strings.Join(errs, "; "))
}

// requestScope asks the manager at a for unit, a scope holding pid with
// Delegate=yes, and waits until its job ends.
func requestScope(ctx context.Context, a busAddr, unit string, pid int) error {
	c, err := dbus.Dial(ctx, a.addr, a.bus)
	if err != nil {
		return err // it names the socket
	}
	defer c.Close()
	fail := func(err error) error { return fmt.Errorf("%s: %w", a.addr, err) }
	if a.bus {
		// Before the call: its job may end before the reply is read. (On
		// its own socket, the manager sends every signal anyway.)
		match, _ := dbus.NewCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s", jobRemovedRule)
		if _, err := c.Call(ctx, match); err != nil {
			return fail(err)
		}
	}
	call, err := dbus.NewCall(systemdName, systemdPath, systemdManager, "StartTransientUnit", "ssa(sv)a(sa(sv))",
		unit, "fail", []any{
			[]any{"Description", dbus.Variant{Sig: "s", Value: fmt.Sprintf("nanosandbox-mcp (pid %d) and the cgroups of its commands", pid)}},
			[]any{"PIDs", dbus.Variant{Sig: "au", Value: []any{uint32(pid)}}},
			[]any{"Delegate", dbus.Variant{Sig: "b", Value: true}},
			// Removed when it ends, even failed: no unit is left to
			// collide with a later server of the same pid.
			[]any{"CollectMode", dbus.Variant{Sig: "s", Value: "inactive-or-failed"}},
		}, []any{})
	if err != nil {
		return bug(err)
	}
	call.Flags |= dbus.NoAutoStart
	reply, err := c.Call(ctx, call)
	if err != nil {
		return fail(fmt.Errorf("StartTransientUnit: %w", err))
	}
	args, err := reply.Args()
	job, ok := dbus.ObjectPath(""), false
	if err == nil && len(args) == 1 {
		job, ok = args[0].(dbus.ObjectPath)
	}
	if !ok {
		return fail(fmt.Errorf("StartTransientUnit: a reply of type %q, not a job", reply.Signature))
	}
	removed, err := c.Wait(ctx, func(m *dbus.Message) bool {
		if m.Type != dbus.Signal || m.Interface != systemdManager || m.Member != "JobRemoved" || m.Signature != "uoss" || m.Sender != reply.Sender {
			return false // on a bus, only the manager that answered may end its job
		}
		args, err := m.Args()
		return err == nil && args[1] == job
	})
	if err != nil {
		return fail(fmt.Errorf("waiting for job %s: %w", job, err))
	}
	args, _ = removed.Args()
	if result := args[3].(string); result != "done" {
		return fail(fmt.Errorf("the job starting %s ended %q", unit, result))
	}
	return nil
}
