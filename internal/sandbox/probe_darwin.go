package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// sandboxExec is the program that applies a Seatbelt profile and runs a
// command under it, by its absolute path: never one found on PATH.
const sandboxExec = "/usr/bin/sandbox-exec"

// probe finds what this Mac can enforce. Unless quick, it applies a
// profile once, which fails where this process is itself sandboxed (a
// sandboxed process cannot start a nested sandbox).
func probe(quick bool) Capabilities {
	c := Capabilities{OS: runtime.GOOS, Arch: runtime.GOARCH, CgroupWhy: "not Linux"}
	version, _ := unix.Sysctl("kern.osproductversion")
	release, _ := unix.Sysctl("kern.osrelease")
	if version != "" {
		c.Kernel = "macOS " + version + " (Darwin " + release + ")"
	}
	c.Identity = fmt.Sprintf("the caller, uid %d", os.Getuid())
	c.Seatbelt = probeSeatbelt(quick)
	return c
}

// probeSeatbelt returns why sandbox-exec cannot apply a profile, or "".
func probeSeatbelt(quick bool) string {
	fi, err := os.Stat(sandboxExec)
	switch {
	case err != nil:
		return fmt.Sprintf("%s: %v", sandboxExec, unwrap(err))
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return sandboxExec + " is not an executable file"
	case quick:
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sandboxExec, "-p", "(version 1)(allow default)", "--", "/usr/bin/true")
	cmd.Env = []string{}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = err.Error()
		}
		return strings.TrimPrefix(msg, "sandbox-exec: ")
	}
	return ""
}
