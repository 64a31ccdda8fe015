package gitguard

import "path/filepath"

// npx -y nanosandbox-mcp, the README's way to start the server, prefers a
// nanosandbox-mcp package in the node_modules of the directory it runs
// in, and MCP clients start servers in the project's directory: a package
// of that name a command planted in the workspace would run, as the user,
// outside any sandbox, at the next start. So at the top of every root it
// is an element of the user's own, judged when a call made or changed it
// (what is below it included) and then moved aside; one there while no
// call ran, a dependency the user installed, stays while calls leave it
// as it is.

// launcherPaths are where npx finds a package or its program in a
// directory's node_modules.
var launcherPaths = []string{"node_modules/nanosandbox-mcp", "node_modules/.bin/nanosandbox-mcp"}

// launchers returns the launcher elements of root that exist.
func launchers(root string) []element {
	var out []element
	for _, rel := range launcherPaths {
		p := filepath.Join(root, rel)
		id, err := lstatIdent(p)
		if err != nil || !id.exists() {
			continue
		}
		e := element{role: roleLauncher, path: p, id: id, user: true}
		if id.isDir() {
			budget := maxStrayEntries
			sum, err := treeSum(p, id, 0, &budget)
			if err != nil {
				sum = unreadSum
			}
			e.id.Sum = sum
		}
		out = append(out, e)
	}
	return out
}
