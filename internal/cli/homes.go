package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// homesMain lists the private homes (nanosandbox-mcp homes), or removes
// those whose workspace is gone (homes --prune).
func homesMain(args []string, stdout, stderr io.Writer) int {
	prune := false
	for _, a := range args {
		switch a {
		case "--prune":
			prune = true
		case "-h", "--help":
			fmt.Fprintf(stdout, "usage: %s homes [--prune]\n\nLists the private homes the server keeps, one per workspace (HOME inside the\nsandbox: tool caches persist there), with their size and when they were\nlast used. --prune removes those whose workspace no longer exists.\n", name)
			return exitOK
		default:
			return fail(stderr, &usageError{msg: fmt.Sprintf("homes: unexpected argument %q", a), hint: "run " + name + " homes, or " + name + " homes --prune"})
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return fail(stderr, &usageError{msg: "homes: no cache directory: " + err.Error(), hint: "set HOME or XDG_CACHE_HOME"})
	}
	stateDir := filepath.Join(cache, name)
	if prune {
		removed, err := policy.HomesPrune(stateDir)
		for _, h := range removed {
			fmt.Fprintf(stdout, "removed %s (%s; its workspace %s is gone)\n", h.Dir, policy.FormatSize(h.Bytes), h.Workspace)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: error: %s\n", name, err)
			return exitRuntime
		}
		if len(removed) == 0 {
			fmt.Fprintln(stdout, "nothing to remove: every private home's workspace exists")
		}
		return exitOK
	}
	homes, err := policy.Homes(stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "%s: error: %s\n", name, err)
		return exitRuntime
	}
	if len(homes) == 0 {
		fmt.Fprintf(stdout, "no private homes in %s\n", filepath.Join(stateDir, "homes"))
		return exitOK
	}
	var orphans int
	for _, h := range homes {
		ws, used := h.Workspace, "never recorded"
		if ws == "" {
			ws = "(workspace not recorded)"
		}
		if !h.LastUsed.IsZero() {
			used = "last used " + h.LastUsed.Format("2006-01-02")
		}
		mark := ""
		if h.Orphan {
			mark = "  [workspace gone]"
			orphans++
		}
		fmt.Fprintf(stdout, "%-10s %s  %s  %s%s\n", policy.FormatSize(h.Bytes), h.Dir, ws, used, mark)
	}
	if orphans > 0 {
		fmt.Fprintf(stdout, "%d of them serve a workspace that is gone: %s homes --prune removes them\n", orphans, name)
	}
	return exitOK
}
