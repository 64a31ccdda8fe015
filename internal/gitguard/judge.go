package gitguard

import (
	"fmt"
	"strings"
)

// plainKeys are the config keys a git directory made during a call may
// hold and still be trusted: what git itself writes on init, clone
// (--recurse-submodules too), submodule, worktree, sparse-checkout and
// branch --edit-description, what git-lfs writes outside its filters and
// hooks, what gh writes, and settings that run nothing and point nowhere
// outside the repository. None names a program, a file, a URL rewrite or
// an include. Anything else (core.fsmonitor,
// core.hooksPath, core.pager, filters, diff and merge drivers, aliases,
// credential helpers, include and includeIf, url rewrites, ...) makes it
// untrusted. "*" stands for any subsection.
var plainKeys = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true,
	"core.logallrefupdates": true, "core.ignorecase": true, "core.precomposeunicode": true,
	"core.symlinks": true, "core.worktree": true, "core.autocrlf": true, "core.eol": true,
	"core.safecrlf": true, "core.quotepath": true, "core.sparsecheckout": true,
	"core.sparsecheckoutcone": true, "core.sharedrepository": true, "core.untrackedcache": true,
	"core.splitindex": true, "core.commitgraph": true, "core.multipackindex": true,
	"core.compression": true, "core.loosecompression": true, "core.preloadindex": true,
	"core.checkstat": true, "core.trustctime": true, "core.abbrev": true,
	"extensions.objectformat": true, "extensions.worktreeconfig": true,
	"extensions.refstorage": true, "extensions.partialclone": true, "extensions.preciousobjects": true,
	"extensions.noop": true,
	"index.version":   true, "index.sparse": true, "index.skiphash": true,
	"init.defaultbranch": true, "user.name": true, "user.email": true,
	"pull.rebase": true, "pull.ff": true, "fetch.prune": true, "fetch.prunetags": true,
	"fetch.writecommitgraph": true, "push.default": true, "push.autosetupremote": true,
	"gc.auto": true, "receive.denynonfastforwards": true, "receive.denycurrentbranch": true,
	"lfs.repositoryformatversion": true, "lfs.*.access": true,
	"remote.*.url": true, "remote.*.pushurl": true, "remote.*.fetch": true, "remote.*.push": true,
	"remote.*.tagopt": true, "remote.*.prune": true, "remote.*.mirror": true,
	"remote.*.promisor": true, "remote.*.partialclonefilter": true, "remote.*.gh-resolved": true,
	"branch.*.remote": true, "branch.*.merge": true, "branch.*.rebase": true, "branch.*.pushremote": true,
	"branch.*.description": true,
	"submodule.active":     true, // a pathspec of the submodules to check out
	"submodule.*.url":      true, "submodule.*.active": true, "submodule.*.branch": true,
}

// plainKey reports whether e is in plainKeys.
func plainKey(e entry) bool {
	name := e.Section + "." + e.Name
	if e.Subsection != "" {
		name = e.Section + ".*." + e.Name
	}
	return plainKeys[name]
}

// judgeConfig says why a config file's content would make the user's git
// run something or read another file, or "" if it holds only plain keys.
// The content is listed by git, the only reader that agrees with git.
func judgeConfig(list lister, content []byte) string {
	entries, err := list(content)
	if err != nil {
		return "git could not read it (" + err.Error() + ")"
	}
	for _, e := range entries {
		if !plainKey(e) {
			return "it sets " + e.key()
		}
	}
	return ""
}

// judgeHooks says why a hooks directory's entries would run, or "". Git
// runs hooks/NAME for the names it knows; any entry that is not one of the
// samples git installs counts, whatever its mode.
func judgeHooks(ents []dirEntry, samplesOnly bool) string {
	for _, e := range ents {
		if samplesOnly && strings.HasSuffix(e.name, ".sample") && e.id.isReg() {
			continue
		}
		return fmt.Sprintf("it holds %s", e.name)
	}
	return ""
}
