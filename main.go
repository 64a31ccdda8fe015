// Command nanosandbox-mcp is an MCP server, spoken over stdio, whose one tool
// runs a program inside an OS sandbox the launcher configures with flags.
package main

import (
	"context"
	"os"

	"github.com/nanosandbox/nanosandbox-mcp/internal/cli"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox"
)

// version is stamped at release time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// The sandbox re-executes this binary as its helper: that check comes
	// before anything else, so the helper starts no server.
	if sandbox.IsChild() {
		sandbox.ChildMain()
	}
	os.Exit(cli.Main(context.Background(), version, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
