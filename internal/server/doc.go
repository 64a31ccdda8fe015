// Package server is the MCP side: the run_command tool's schema, its
// handler, the mapping from a sandbox outcome to a tool result, and serving
// on stdio. It holds every MCP type; it imports sandbox and policy.
package server
