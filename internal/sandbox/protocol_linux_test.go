package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

func reportLine(t testing.TB, r report) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestReadReports(t *testing.T) {
	long := strings.Repeat("deep/", 40000) // 200 KB: over the 64 KiB a line once could be
	for _, tt := range []struct {
		name     string
		in       [][]byte
		want     []report
		wantTook int
	}{
		{
			name:     "took, start, exit",
			in:       [][]byte{[]byte(`{"took":true}` + "\n"), []byte(`{"start":{"Path":"x","Err":"no","NotFound":true}}` + "\n"), []byte(`{"exit":{"code":3,"signal":0}}` + "\n")},
			want:     []report{{Start: &StartError{Path: "x", Err: "no", NotFound: true}}, {Exit: &exitReport{Code: 3}}},
			wantTook: 1,
		},
		{
			name: "a long line arrives whole",
			in:   [][]byte{[]byte(`{"ready":true}` + "\n"), []byte(`{"start":{"Path":"` + long + `","Err":"file name too long"}}` + "\n")},
			want: []report{{Ready: true}, {Start: &StartError{Path: long, Err: "file name too long"}}},
		},
		{
			name: "garbage is skipped, the end need not be a newline",
			in:   [][]byte{[]byte("not json\n\n{\"exit\":"), []byte("{\"code\":1,\"signal\":9}}")},
			want: []report{{Exit: &exitReport{Code: 1, Signal: 9}}},
		},
		{
			name: "a line over the bound is dropped, the next one is read",
			in:   [][]byte{[]byte(`{"start":{"Path":"`), bytes.Repeat([]byte("x"), maxReportBytes), []byte(`"}}` + "\n" + `{"exit":{"code":0,"signal":0}}` + "\n")},
			want: []report{{Exit: &exitReport{}}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			took := 0
			got := readReports(io.MultiReader(readers(tt.in)...), func() { took++ })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reports (-want +got):\n%s", diff)
			}
			if took != tt.wantTook {
				t.Errorf("took called %d times, want %d", took, tt.wantTook)
			}
		})
	}
}

func readers(bs [][]byte) []io.Reader {
	var rs []io.Reader
	for _, b := range bs {
		rs = append(rs, bytes.NewReader(b))
	}
	return rs
}

// FuzzReadReports feeds arbitrary bytes between well-formed reports: the
// reader never panics or stops early, and every well-formed report after
// the noise arrives, in order.
func FuzzReadReports(f *testing.F) {
	f.Add([]byte(`{"took":true}`), "prog")
	f.Add([]byte(`{"exit":{"code":1,"signal":0}}`+"\n"+`{"setup":{"Op":"mount","Err":"x"}}`), "")
	f.Add([]byte("{\"start\":{\"Path\":\"\\u0000\\ud800\",\"Err\":\"x\"}}\n\xff\xfe{{{"), "a\nb")
	f.Add([]byte(`{"exit":null,"took":"yes","ready":1}`), "/bin/sh")
	f.Fuzz(func(t *testing.T, noise []byte, path string) {
		in := append([]byte(nil), noise...)
		in = append(in, '\n')
		want := []report{
			{Ready: true},
			{Start: &StartError{Path: path, Err: "no such file"}},
			{Exit: &exitReport{Code: 127, Limit: &limitHit{Kind: tmpLimit, Mech: ByTmpfs, Dir: path}}},
		}
		in = append(in, reportLine(t, report{Took: true})...)
		for _, r := range want {
			in = append(in, reportLine(t, r)...)
		}
		took := 0
		got := readReports(bytes.NewReader(in), func() { took++ })
		if took == 0 {
			t.Fatalf("took never called for %q", in)
		}
		if len(got) < len(want) {
			t.Fatalf("got %d reports, want at least %d", len(got), len(want))
		}
		// What the reader can give back is what JSON carries: strings as
		// valid UTF-8.
		var carried []report
		b, _ := json.Marshal(want)
		if err := json.Unmarshal(b, &carried); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(carried, got[len(got)-len(want):]); diff != "" {
			t.Errorf("the last reports (-want +got):\n%s", diff)
		}
	})
}

// FuzzSpec decodes arbitrary bytes as the helper decodes its spec: no
// panic, and a spec it accepts says the same once encoded again (what the
// helper passes on to the exec stage).
func FuzzSpec(f *testing.F) {
	seed, err := json.Marshal(spec{
		Ops:     []mountOp{{Kind: opTmpfs, Path: "/tmp", Dir: true, Mode: 0o1777, Size: 1 << 20}, {Kind: opBindRW, Path: "/home/u", Src: "/state/home", Dir: true}},
		UID:     1000,
		GID:     1000,
		Dir:     "/home/u/proj",
		Path:    "sh",
		Args:    []string{"-c", "echo hi"},
		Env:     []string{"PATH=/usr/bin:/bin"},
		Limits:  policy.Limits{MemoryBytes: 1 << 30, MaxProcesses: 64, CPUTime: time.Minute},
		Mech:    Mechanisms{Memory: ByRlimit, Processes: ByRlimit},
		Timeout: time.Second,
		Root:    &rootID{Mount: 1, Dev: 2, Ino: 3},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"ops":[{"k":99,"p":"../x"}],"uid":-1,"args":null,"timeout":-5}`))
	f.Add([]byte(`{"path":"\u0000","probe":true,"root":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var s spec
		if json.Unmarshal(raw, &s) != nil {
			return
		}
		again, err := json.Marshal(&s)
		if err != nil {
			t.Fatalf("encode a decoded spec: %v", err)
		}
		var s2 spec
		if err := json.Unmarshal(again, &s2); err != nil {
			t.Fatalf("decode %s: %v", again, err)
		}
		if diff := cmp.Diff(s, s2, cmp.AllowUnexported(spec{})); diff != "" {
			t.Errorf("spec changed through the pipe (-first +second):\n%s", diff)
		}
	})
}

// TestErrorsKeepTheirErrno sends the errors a child reports through the
// report pipe: the errno that caused each still answers errors.Is.
func TestErrorsKeepTheirErrno(t *testing.T) {
	for _, tt := range []struct {
		name    string
		rep     report
		want    error
		message string
	}{
		{"setup, wrapped", report{Setup: asSetupError(fmt.Errorf("mount %q: %w", "/x", unix.EROFS))}, unix.EROFS, `sandbox setup failed: mount "/x": read-only file system`},
		{"setup, from a step", report{Setup: setupError("pivot_root .", unix.EPERM)}, unix.EPERM, "sandbox setup failed: pivot_root .: operation not permitted"},
		{"start, missing", report{Start: startError("/w/prog", unix.ENOENT)}, fs.ErrNotExist, `failed to start "/w/prog": no such file inside the sandbox`},
		{"start, not executable", report{Start: startError("/w/prog", unix.EACCES)}, fs.ErrPermission, `failed to start "/w/prog": permission denied`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := readReports(bytes.NewReader(reportLine(t, tt.rep)), func() {})
			if len(rs) != 1 {
				t.Fatalf("got %d reports, want 1", len(rs))
			}
			var err error
			if rs[0].Setup != nil {
				err = rs[0].Setup
			} else {
				err = rs[0].Start
			}
			if !errors.Is(err, tt.want) || !strings.HasPrefix(err.Error(), tt.message) {
				t.Errorf("got %v (errno %v), want one that is %v and starts %q", err, errors.Unwrap(err), tt.want, tt.message)
			}
		})
	}
	if err := (&SetupError{Op: "exec stage", Err: "ended"}); errors.Unwrap(err) != nil {
		t.Errorf("a SetupError without an errno unwraps to %v, want nil", errors.Unwrap(err))
	}
}
