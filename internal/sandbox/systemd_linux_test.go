package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/dbus"
	"github.com/nanosandbox/nanosandbox-mcp/internal/dbus/dbustest"
)

func TestManagerFor(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tt := range []struct {
		name   string
		uid    int
		getenv func(string) string
		want   manager
	}{
		{"a user in a session", 1000, env("XDG_RUNTIME_DIR", "/run/user/1000", "DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
			manager{"user manager", []busAddr{{"unix:path=/run/user/1000/bus", true}, {"unix:path=/run/user/1000/systemd/private", false}}}},
		{"a user with another bus", 1000, env("XDG_RUNTIME_DIR", "/run/user/1000", "DBUS_SESSION_BUS_ADDRESS", "unix:abstract=/tmp/dbus-x"),
			manager{"user manager", []busAddr{{"unix:abstract=/tmp/dbus-x", true}, {"unix:path=/run/user/1000/bus", true}, {"unix:path=/run/user/1000/systemd/private", false}}}},
		{"a user without a session's environment", 1001, env(),
			manager{"user manager", []busAddr{{"unix:path=/run/user/1001/bus", true}, {"unix:path=/run/user/1001/systemd/private", false}}}},
		{"a runtime directory to escape", 1000, env("XDG_RUNTIME_DIR", "/tmp/a;b"),
			manager{"user manager", []busAddr{{"unix:path=/tmp/a%3bb/bus", true}, {"unix:path=/tmp/a%3bb/systemd/private", false}}}},
		{"root", 0, env("XDG_RUNTIME_DIR", "/run/user/1000", "DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
			manager{"system manager", []busAddr{{"unix:path=/run/dbus/system_bus_socket", true}, {"unix:path=/run/systemd/private", false}}}},
		{"root with a system bus address", 0, env("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/var/run/dbus/system_bus_socket"),
			manager{"system manager", []busAddr{{"unix:path=/var/run/dbus/system_bus_socket", true}, {"unix:path=/run/systemd/private", false}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := managerFor(tt.uid, tt.getenv)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(manager{}, busAddr{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// fakeSystemd answers StartTransientUnit as systemd does: with the job's
// path, then JobRemoved with the job's result.
type fakeSystemd struct {
	result      string // "" for "done"
	sender      string // set on what it sends, as a bus would
	signalFirst bool   // JobRemoved before the reply
	otherJob    bool   // JobRemoved of another job first
	spoofed     bool   // JobRemoved from another sender only
	silent      bool   // no JobRemoved at all
	fail        *dbus.Message

	mu    sync.Mutex
	calls [][]any
}

func (f *fakeSystemd) got() [][]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeSystemd) handle(c *dbustest.Conn, m *dbus.Message) {
	if m.Member != "StartTransientUnit" || m.Interface != systemdManager || m.Path != systemdPath || m.Destination != systemdName {
		c.Send(dbus.NewError(m, "org.freedesktop.DBus.Error.UnknownMethod", "unexpected "+m.Member))
		return
	}
	args, err := m.Args()
	if err != nil || m.Signature != "ssa(sv)a(sa(sv))" {
		c.Send(dbus.NewError(m, "org.freedesktop.DBus.Error.InvalidArgs", "bad arguments"))
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, args)
	f.mu.Unlock()
	if f.fail != nil {
		f.fail.ReplySerial = m.Serial
		c.Send(f.fail)
		return
	}
	result := f.result
	if result == "" {
		result = "done"
	}
	removed := func(id uint32, sender string) {
		s, _ := dbus.NewSignal(systemdPath, systemdManager, "JobRemoved", "uoss",
			id, dbus.ObjectPath("/org/freedesktop/systemd1/job/"+string(rune('0'+id))), args[0].(string), result)
		s.Sender = sender
		c.Send(s)
	}
	if f.otherJob {
		removed(6, f.sender)
	}
	if f.spoofed {
		removed(7, ":1.99")
	}
	if f.signalFirst && !f.silent && !f.spoofed {
		removed(7, f.sender)
	}
	r, _ := dbus.NewReply(m, "o", dbus.ObjectPath("/org/freedesktop/systemd1/job/7"))
	r.Sender = f.sender
	c.Send(r)
	if !f.signalFirst && !f.silent && !f.spoofed {
		removed(7, f.sender)
	}
}

// wantScopeCall is what requestScope must ask for.
func wantScopeCall(unit string, pid int) []any {
	return []any{unit, "fail", []any{
		[]any{"Description", dbus.Variant{Sig: "s", Value: "nanosandbox-mcp (pid 4242) and the cgroups of its commands"}},
		[]any{"PIDs", dbus.Variant{Sig: "au", Value: []any{uint32(pid)}}},
		[]any{"Delegate", dbus.Variant{Sig: "b", Value: true}},
		[]any{"CollectMode", dbus.Variant{Sig: "s", Value: "inactive-or-failed"}},
	}, []any{}}
}

func TestRequestScope(t *testing.T) {
	for _, bus := range []bool{true, false} {
		for _, tt := range []struct {
			name string
			f    *fakeSystemd
		}{
			{"reply, then JobRemoved", &fakeSystemd{}},
			{"JobRemoved before the reply", &fakeSystemd{signalFirst: true}},
			{"another job ends first", &fakeSystemd{otherJob: true}},
		} {
			name := "peer/" + tt.name
			if bus {
				name = "bus/" + tt.name
			}
			t.Run(name, func(t *testing.T) {
				f := tt.f
				start := dbustest.NewPeer
				if bus {
					f.sender = ":1.0"
					start = dbustest.NewBus
				}
				s := start(t, f.handle)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := requestScope(ctx, busAddr{s.Addr, bus}, "nanosandbox-mcp-4242.scope", 4242); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([][]any{wantScopeCall("nanosandbox-mcp-4242.scope", 4242)}, f.got()); diff != "" {
					t.Errorf("StartTransientUnit (-want +got):\n%s", diff)
				}
				var wantMatches []string
				if bus {
					wantMatches = []string{jobRemovedRule}
				}
				if diff := cmp.Diff(wantMatches, s.Matches()); diff != "" {
					t.Errorf("AddMatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestRequestScopeFails(t *testing.T) {
	exists := &dbus.Message{Type: dbus.ErrorReply, ErrorName: "org.freedesktop.systemd1.UnitExists", Signature: "s"}
	exists.Body, _ = dbus.Marshal("s", "Unit nanosandbox-mcp-4242.scope already exists.")
	for _, tt := range []struct {
		name string
		f    *fakeSystemd
		want string
	}{
		{"the unit exists", &fakeSystemd{fail: exists}, "StartTransientUnit: org.freedesktop.systemd1.UnitExists: Unit nanosandbox-mcp-4242.scope already exists."},
		{"the job fails", &fakeSystemd{result: "failed"}, `the job starting nanosandbox-mcp-4242.scope ended "failed"`},
		{"no JobRemoved", &fakeSystemd{silent: true}, "waiting for job /org/freedesktop/systemd1/job/7: dbus: wait: context deadline exceeded"},
		{"JobRemoved from another sender", &fakeSystemd{spoofed: true}, "waiting for job"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.sender = ":1.0"
			s := dbustest.NewBus(t, tt.f.handle)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err := requestScope(ctx, busAddr{s.Addr, true}, "nanosandbox-mcp-4242.scope", 4242)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), s.Addr+": ") {
				t.Errorf("got %v, want an error naming %s with %q", err, s.Addr, tt.want)
			}
		})
	}
	// A reply that is not a job.
	s := dbustest.NewPeer(t, func(c *dbustest.Conn, m *dbus.Message) { c.Reply(m, "s", "what") })
	err := requestScope(context.Background(), busAddr{s.Addr, false}, "x.scope", 1)
	if err == nil || !strings.Contains(err.Error(), `a reply of type "s", not a job`) {
		t.Errorf("a reply of type s: got %v", err)
	}
	// No systemd on the bus: a bus answers for a name nobody owns.
	s = dbustest.NewBus(t, func(c *dbustest.Conn, m *dbus.Message) {
		c.Send(dbus.NewError(m, "org.freedesktop.DBus.Error.ServiceUnknown", "The name org.freedesktop.systemd1 was not provided by any .service files"))
	})
	err = requestScope(context.Background(), busAddr{s.Addr, true}, "x.scope", 1)
	if err == nil || !strings.Contains(err.Error(), "ServiceUnknown") {
		t.Errorf("no systemd on the bus: got %v", err)
	}
}

// TestStartScopeTriesEachAddress: the first address that takes the request
// wins; when none does, each says why.
func TestStartScopeTriesEachAddress(t *testing.T) {
	missing := dbus.UnixAddress(filepath.Join(t.TempDir(), "bus"))
	f := &fakeSystemd{}
	s := dbustest.NewPeer(t, f.handle)
	m := manager{"user manager", []busAddr{{missing, true}, {s.Addr, false}}}
	if err := m.startScope(context.Background(), "nanosandbox-mcp-4242.scope", 4242); err != nil {
		t.Fatal(err)
	}
	if len(f.got()) != 1 {
		t.Errorf("got %d calls, want 1", len(f.got()))
	}
	noSystemd := dbustest.NewBus(t, nil)
	m = manager{"user manager", []busAddr{{noSystemd.Addr, true}, {missing, false}}}
	err := m.startScope(context.Background(), "nanosandbox-mcp-4242.scope", 4242)
	if err == nil || !strings.Contains(err.Error(), "UnknownMethod") || !strings.Contains(err.Error(), "; dial unix ") || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("got %v, want both failures", err)
	}
}

// TestRequestScopeThroughDBusDaemon asks through a real bus, the reference
// implementation's, which checks every message it routes, for a scope
// from a fake systemd that owns systemd's name on it.
func TestRequestScopeThroughDBusDaemon(t *testing.T) {
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("needs dbus-daemon; this machine has none")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "bus")
	conf := filepath.Join(dir, "bus.conf")
	os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=`+sock+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`), 0o644)
	cmd := exec.Command(daemon, "--config-file="+conf, "--nofork", "--nopidfile")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("dbus-daemon's stderr:\n%s", stderr.String())
		}
	})
	addr := dbus.UnixAddress(sock)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var systemd *dbus.Conn
	for {
		if systemd, err = dbus.Dial(ctx, addr, true); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer systemd.Close()
	own, _ := dbus.NewCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su", systemdName, uint32(4))
	if r, err := systemd.Call(ctx, own); err != nil {
		t.Fatal(err)
	} else if args, _ := r.Args(); len(args) != 1 || args[0] != uint32(1) {
		t.Fatalf("RequestName: got %v, want 1 (the primary owner)", args)
	}
	served := make(chan []any, 1)
	go func() {
		defer close(served)
		m, err := systemd.Wait(ctx, func(m *dbus.Message) bool { return m.Member == "StartTransientUnit" })
		if err != nil {
			t.Error(err)
			return
		}
		args, err := m.Args()
		if err != nil {
			t.Error(err)
		}
		r, _ := dbus.NewReply(m, "o", dbus.ObjectPath("/org/freedesktop/systemd1/job/7"))
		systemd.Send(r)
		s, _ := dbus.NewSignal(systemdPath, systemdManager, "JobRemoved", "uoss",
			uint32(7), dbus.ObjectPath("/org/freedesktop/systemd1/job/7"), args[0].(string), "done")
		systemd.Send(s) // broadcast: the client's match rule brings it
		served <- args
	}()
	if err := requestScope(ctx, busAddr{addr, true}, "nanosandbox-mcp-4242.scope", 4242); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantScopeCall("nanosandbox-mcp-4242.scope", 4242), <-served); diff != "" {
		t.Errorf("StartTransientUnit as routed (-want +got):\n%s", diff)
	}
}

func TestReportNamesTheScope(t *testing.T) {
	c := Capabilities{OS: "linux", Arch: "amd64", LandlockABI: 7,
		Cgroup: "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/nanosandbox-mcp-42.scope", CgroupScope: "the systemd user manager"}
	want := "limits        ok    cgroup v2, delegated at /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/nanosandbox-mcp-42.scope (a scope the systemd user manager started for the server)\n"
	if got := c.Report(); !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant a line\n%s", got, want)
	}
}

// TestJoinScopeAsksNothingNeedlessly: a server that has a delegated cgroup
// keeps it, and on cgroup v1 nothing is asked.
func TestJoinScopeAsksNothingNeedlessly(t *testing.T) {
	c := Capabilities{OS: "linux", Cgroup: "/sys/fs/cgroup/x"}
	if got := JoinScope(c); got != c {
		t.Errorf("with a delegated cgroup: got %+v, want it unchanged", got)
	}
	if cgroup2Mounted() {
		return
	}
	c = Capabilities{OS: "linux", CgroupWhy: "this machine has cgroup v1 (or a v1/v2 hybrid)"}
	if got := JoinScope(c); got != c {
		t.Errorf("on cgroup v1: got %+v, want it unchanged", got)
	}
}
