// Package cli reads the command line, checks every flag before anything is
// served, and runs the chosen mode: serve MCP on stdio, run one command,
// --check, --version or --help. It owns the messages for the person who
// launches the server and the exit codes.
//
// It imports server, sandbox and policy.
package cli
