// Package gitguard keeps the user's own git from running anything a
// sandboxed command planted (DESIGN.md §2.3, "Git, structurally").
//
// The user's git, run later outside any sandbox, obeys the git directories
// it finds: their config (core.fsmonitor, filters, aliases...), their hooks,
// and whatever those redirect to (gitfiles, commondir, includes,
// core.hooksPath), and writes and deletes in their work trees (core.worktree,
// a linked worktree's gitdir). A [Guard] finds every git directory that git
// could enter from any path below a writable root, the way git finds them:
// a ".git" of any kind at any depth (object stores included, any case), any
// directory git would take for a bare repository, and the repositories that
// hold a root. It follows gitfiles, symlinks, commondir, includes and work
// trees to wherever they point, resolving each path as the kernel does for
// git (never as text, never through /proc), and reads what git goes on
// with or sends elsewhere: a stopped operation's state (rebase-merge,
// rebase-apply, sequencer: every entry, of which only those git keeps
// there and reads as ids, messages or switches are inert; to-do lists,
// merge strategies and their options, git apply's options are read),
// rerere's record of a merge's conflicts (MERGE_RR), and, of a trusted
// repository, what changes the history git shows without running anything
// (replace refs, info/grafts, a new shallow file, rr-cache's recorded
// resolutions: history.go), the index (every
// name in it is a path git writes and reads from the work tree, and git
// checks names only when it adds them: index.go has git check them), legacy remotes
// (remotes/, branches/) and every place a remote's local URL leads git
// push and fetch. A commondir must name a whole git directory (HEAD,
// objects/, refs/), where the finders look for links. Then, around every
// call:
//
//   - [Guard.Begin] lists what must be read-only for the call: every part of
//     a trusted git directory through which git would run code (config,
//     hooks, redirections, included files, core.hooksPath), plus stand-ins
//     inside git directories for the absent ones that git would read at
//     once (hooks/, commondir, config.worktree), so that they cannot be
//     created.
//   - [Call.End], once every process of the call is gone and before its
//     result is returned, compares every git directory with what was
//     trusted. What is new or changed is judged by the host's own git
//     ("git config --list" on a copy read safely, never a parser of ours):
//     a config key outside a short allow-list of plain settings, a hook that
//     is not a sample, a redirection out of the writable roots, or anything
//     that cannot be read safely is made harmless by renaming it aside, and
//     the call's result says so. Every symbolic link made inside a git
//     directory during the call is removed (links.go): git writes through
//     them. A git directory that lies in another repository's work tree
//     (its own, a core.worktree's, a linked worktree's), not below a .git,
//     is one that repository's git writes into: of the two, the side the
//     call made is moved aside (intree.go).
//     In a trusted repository, what would keep the call's edits out
//     of the user's git status and git diff goes too: the assume-unchanged
//     and skip-worktree bits a call set in the index, and the stat data
//     of every entry it made or changed, which git would trust over the
//     file (hidden.go); an info/exclude or info/attributes it made or
//     changed is moved aside.
//
// What lies in a grant the user made writable by name (Config.Exempt) is
// neither protected nor judged, but a repository made in a call outside
// the grant is judged wherever its parts lie, the grant included.
//
// A git directory is trusted when it is seen while no call runs: the user
// made it, or it was judged harmless at the end of a call. Everything read
// from a writable root is hostile input: opened without following symlinks,
// non-blocking, only when it is a regular file, with a size cap.
//
// No entry appears in a work tree: stand-ins live only inside git
// directories, where git status does not look, and only while calls run.
// What remains is a window while a call runs: a git directory the command
// creates (git init, a nested repository) is live for the user's git until
// the call ends and it is judged.
//
// It imports policy-free standard library packages, x/sys and logline
// (which escapes its log lines) only; the sandbox package maps its
// protections to mounts.
package gitguard
