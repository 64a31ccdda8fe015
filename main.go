// Command nanosandbox-mcp is an MCP server, spoken over stdio, whose one tool
// runs a program inside an OS sandbox the launcher configures with flags.
package main

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/cli"
	"github.com/nanosandbox/nanosandbox-mcp/internal/logline"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox"
)

// version is stamped at release time with -ldflags "-X main.version=...".
// Left as "dev", the module version go install recorded stands in for it
// (see moduleVersion).
var version = "dev"

func main() {
	// The sandbox re-executes this binary as its helper: that check comes
	// before anything else, so the helper starts no server.
	if sandbox.IsChild() {
		sandbox.ChildMain()
	}
	// The log's lines hold names commands chose: each is escaped, for
	// the terminal that shows it (logline).
	slog.SetDefault(slog.New(logline.NewHandler(os.Stderr, nil)))
	os.Exit(cli.Main(context.Background(), moduleVersion(version, debug.ReadBuildInfo), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// moduleVersion returns stamped unless it is "dev", the value of a build
// that was not stamped. Then it returns the main module's version from the
// build info, as `go install github.com/nanosandbox/nanosandbox-mcp@v1.2.3`
// records it, without the "v" (1.2.3, as the releases print it); a build
// from a checkout records "(devel)" or nothing, and stays "dev".
func moduleVersion(stamped string, readBuildInfo func() (*debug.BuildInfo, bool)) string {
	if stamped != "dev" {
		return stamped
	}
	info, ok := readBuildInfo()
	if !ok || info == nil {
		return stamped
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		return stamped
	}
	return strings.TrimPrefix(v, "v")
}
