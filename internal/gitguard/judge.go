package gitguard

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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
//
// Not among them either: remote.*.mirror and remote.*.push, which name no
// program and no place, but change what the user's plain git push writes
// at a remote that may stay (a path granted read-only, a network URL):
// mirror pushes every ref, deleting each one there that the repository
// lacks, and a push refspec deletes (":refs/heads/x") or overwrites
// ("+a:b") what it names. Git clone never writes push; git clone --mirror
// writes mirror, so a mirror clone made in a call is moved aside (one
// whose remote.origin.mirror the call unsets stays).
var plainKeys = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true,
	"core.logallrefupdates": true, "core.ignorecase": true, "core.precomposeunicode": true,
	"core.symlinks": true, "core.worktree": true, "core.autocrlf": true, "core.eol": true,
	"core.safecrlf": true, "core.quotepath": true, "core.sparsecheckout": true,
	"core.sparsecheckoutcone": true, "core.untrackedcache": true,
	"core.splitindex": true, "core.commitgraph": true, "core.multipackindex": true,
	"core.compression": true, "core.loosecompression": true, "core.preloadindex": true,
	"core.checkstat": true, "core.trustctime": true, "core.abbrev": true,
	"extensions.objectformat": true, "extensions.worktreeconfig": true,
	"extensions.preciousobjects": true,
	"extensions.noop":            true,
	"index.version":              true, "index.sparse": true, "index.skiphash": true,
	"init.defaultbranch": true, "user.name": true, "user.email": true,
	"pull.rebase": true, "pull.ff": true, "fetch.prune": true, "fetch.prunetags": true,
	"fetch.writecommitgraph": true, "push.autosetupremote": true,
	"gc.auto": true, "receive.denynonfastforwards": true, "receive.denycurrentbranch": true,
	"lfs.repositoryformatversion": true, "lfs.*.access": true,
	"remote.*.url": true, "remote.*.pushurl": true, "remote.*.fetch": true,
	"remote.*.tagopt": true, "remote.*.prune": true,
	"remote.*.gh-resolved": true,
	"branch.*.remote":      true, "branch.*.merge": true, "branch.*.rebase": true, "branch.*.pushremote": true,
	"branch.*.description": true,
	"submodule.active":     true, // a pathspec of the submodules to check out
	"submodule.*.url":      true, "submodule.*.active": true, "submodule.*.branch": true,
}

// keptKeys are plain only as the trusted version of the same file held
// them, value and all: a call that makes or changes one makes the file
// untrusted. A promisor remote (extensions.partialClone, remote.*.promisor;
// remote.*.partialCloneFilter says what it left out) is one the user's
// plain git diff, show, blame or checkout fetches every missing object
// from, unasked, at the URL the command chose, outside the sandbox and
// its network rules (a path holding what the command read); a clone made
// with --filter in a call is moved aside for it. extensions.refStorage
// other than files has git read the refs from a store the command
// filled (reftable/), in place of the user's branches (plainValues).
var keptKeys = map[string]bool{
	"extensions.partialclone": true, "extensions.refstorage": true,
	"remote.*.promisor": true, "remote.*.partialclonefilter": true,
}

// quietKeys are more settings that run nothing and lead nowhere, which an
// agent sets in a repository it made (from an honest-use audit: each used
// to cost the repository): whether to sign (the user's own gpg signs),
// how output looks, defaults of merge, rebase, status, log, diff, fetch
// and branches, rerere, submodule recursion. Not among them: anything that
// names a program (a merge strategy, pull.twohead, a tool, a driver, a
// pager, an editor), a file (mailmap.file, a signing key's path) or a URL.
var quietKeys = map[string]bool{
	"commit.gpgsign": true, "tag.gpgsign": true, "tag.forcesignannotated": true, "push.gpgsign": true,
	"commit.verbose": true, "commit.cleanup": true, "commit.status": true,
	"merge.conflictstyle": true, "merge.ff": true, "merge.log": true, "merge.renames": true, "merge.stat": true,
	"merge.autostash": true, "merge.verbosity": true,
	"rebase.autosquash": true, "rebase.autostash": true, "rebase.updaterefs": true, "rebase.stat": true,
	"rebase.abbreviatecommands": true, "rebase.missingcommitscheck": true, "rebase.reschedulefailedexec": true,
	"status.showuntrackedfiles": true, "status.short": true, "status.branch": true, "status.submodulesummary": true,
	"status.aheadbehind": true, "status.relativepaths": true, "status.renames": true, "status.showstash": true,
	"log.date": true, "log.decorate": true, "log.follow": true, "log.abbrevcommit": true, "log.showroot": true,
	"log.mailmap": true, "log.showsignature": true,
	"diff.algorithm": true, "diff.renames": true, "diff.mnemonicprefix": true, "diff.noprefix": true,
	"diff.colormoved": true, "diff.context": true, "diff.indentheuristic": true, "diff.submodule": true,
	"diff.ignoresubmodules": true, "diff.statgraphwidth": true, "diff.renamelimit": true,
	"core.longpaths": true, "core.whitespace": true, "core.fscache": true,
	"submodule.recurse": true, "submodule.fetchjobs": true,
	"branch.autosetupmerge": true, "branch.autosetuprebase": true, "branch.sort": true, "tag.sort": true,
	"rerere.enabled": true, "rerere.autoupdate": true,
	"fetch.recursesubmodules": true, "fetch.parallel": true, "fetch.showforcedupdates": true,
	"gc.autodetach": true, "gc.reflogexpire": true, "gc.reflogexpireunreachable": true, "gc.pruneexpire": true,
	"column.ui": true, "i18n.commitencoding": true, "i18n.logoutputencoding": true,
	"index.threads": true,
}

// quietSections are sections every key of which is a switch or a colour:
// color (the pager's own is color.pager, a switch) and advice.
var quietSections = map[string]bool{"color": true, "advice": true}

// plainKey reports whether e is in plainKeys, or runs nothing another way
// (quietKeys, quietSections).
func plainKey(e entry) bool {
	name := e.Section + "." + e.Name
	if e.Subsection != "" {
		name = e.Section + ".*." + e.Name
	}
	return plainKeys[name] || e.Subsection == "" && quietKeys[name] || quietSections[e.Section] || offSwitch(e) || plainValue(e)
}

// plainValues are keys plain with some values only: push.default matching
// pushes every branch of the same name the remote has, not the one the
// user means; core.sharedRepository world (everybody, or a mode that lets
// others write) has the user's git make its files writable by every
// account, which can then plant hooks and config.
var plainValues = map[string][]string{
	"push.default":          {"simple", "current", "upstream", "tracking", "nothing"},
	"extensions.refstorage": {"files"},
	"core.sharedrepository": {"false", "umask", "0", "off", "no", "true", "group", "1", "on", "yes", "0600", "0640", "0660", "0644", "0664"},
}

// plainValue reports whether e is a key of plainValues set to a value of
// its own.
func plainValue(e entry) bool {
	vals, ok := plainValues[e.Section+"."+e.Name]
	return ok && e.Subsection == "" && e.HasValue && slices.Contains(vals, strings.ToLower(e.Value))
}

// offSwitch reports whether e turns off what its key would run: a
// core.fsmonitor of false (git reads a boolean there before a program).
func offSwitch(e entry) bool {
	if e.Section != "core" || e.Subsection != "" || e.Name != "fsmonitor" || !e.HasValue {
		return false
	}
	switch strings.ToLower(e.Value) {
	case "false", "no", "off", "0":
		return true
	}
	return false
}

// judgeConfig says why a config file's content would make the user's git
// run something or read another file, or "" if it holds only plain keys.
// The content is listed by git, the only reader that agrees with git.
func judgeConfig(list lister, content []byte) string { return judgeConfigSince(list, content, nil) }

// judgeConfigSince is judgeConfig for a file whose trusted version held
// prev: a key of keptKeys is plain as prev held it.
func judgeConfigSince(list lister, content []byte, prev []entry) string {
	entries, err := list(content)
	if err != nil {
		return "git could not read it (" + err.Error() + ")"
	}
	var had map[entry]bool
	for _, e := range entries {
		if plainKey(e) {
			continue
		}
		if keptKey(e) {
			if had == nil {
				had = map[entry]bool{}
				for _, p := range prev {
					if keptKey(p) {
						had[p] = true
					}
				}
			}
			if had[e] {
				continue
			}
		}
		return "it sets " + e.key()
	}
	return ""
}

// keptKey reports whether e is a key of keptKeys.
func keptKey(e entry) bool {
	name := e.Section + "." + e.Name
	if e.Subsection != "" {
		name = e.Section + ".*." + e.Name
	}
	return keptKeys[name]
}

// judgeHooks says why the entries of a hooks element e would run, or "".
// Git runs hooks/NAME for the names it knows; any entry counts, whatever
// its mode, but, in a git directory's own hooks directory, a regular file
// that is one of the samples the host's git installs, as it installs it
// (samples gives them by name, asked only when a sample is met), or that
// is as it was in prev, the entries of the trusted version (a repository
// made by an older git keeps that git's samples). A sample rewritten, or
// one git does not install, runs once the user enables it by renaming it.
func judgeHooks(e element, prev []dirEntry, samples func() map[string][]byte) string {
	had := map[string]ident{}
	for _, en := range prev {
		had[en.name] = en.id
	}
	for _, en := range e.entries {
		if e.role == roleHooks && strings.HasSuffix(en.name, ".sample") && en.id.isReg() {
			if id, ok := had[en.name]; ok && id == en.id {
				continue
			}
			want, ok := samples()[en.name]
			if ok {
				// Read with git's size as the cap: a larger file is odd.
				b, _, err := readRegular(filepath.Join(e.path, en.name), int64(len(want)))
				if err == nil && bytes.Equal(b, want) {
					continue
				}
			}
			return fmt.Sprintf("it holds %s, which is not the sample git installs", en.name)
		}
		return fmt.Sprintf("it holds %s", en.name)
	}
	return ""
}

// ownStrategies are the merge strategies git carries itself. For any
// other name, sequencer.c (try_merge_command) runs "git merge-NAME": a
// program found on the PATH or, when NAME holds a slash, wherever the path
// "git-merge-NAME" leads from the work tree, which a command can plant.
var ownStrategies = map[string]bool{"ort": true, "recursive": true, "resolve": true, "octopus": true, "ours": true, "subtree": true}

// quietTodo are the commands of an interactive rebase's to-do list that
// run nothing, by name and one-letter form (sequencer.c,
// todo_command_info). Not among them: exec and x, which run a shell
// command.
var quietTodo = map[string]bool{
	"pick": true, "p": true, "reword": true, "r": true, "edit": true, "e": true,
	"squash": true, "s": true, "fixup": true, "f": true, "drop": true, "d": true,
	"label": true, "l": true, "reset": true, "t": true, "merge": true, "m": true,
	"update-ref": true, "u": true, "break": true, "b": true, "noop": true,
	"revert": true, // a cherry-pick's or revert's to-do list (sequencer/todo)
}

// todoRisks returns the lines of an interactive rebase's to-do list that
// could run something: every line but blank ones, comments, and those
// whose first word is a command that runs nothing. Git has no command that
// lists a to-do list parsed, so this reads it, on an allow-list that can
// only err toward harm. Git runs a line only when it parses it as exec:
// sequencer.c (parse_insn_line, is_command) drops spaces and tabs, then
// takes the first word, delimited by a space, tab, CR, LF or NUL, for the
// command whose whole name or letter it is; the names and letters are
// distinct strings of letters, so a word names one command at most, and a
// line that does not start with a letter names none (git takes it for a
// comment, or refuses the list). This splits lines at LF as git does and
// takes the word with the same blanks and delimiters; a NUL, where git
// stops reading, it refuses. So a line git would run is never passed; a
// line passed that git would refuse costs nothing.
func todoRisks(todo []byte) []string {
	if bytes.IndexByte(todo, 0) >= 0 {
		return []string{"a to-do list with a NUL byte in it"}
	}
	var out []string
	for _, line := range bytes.Split(todo, []byte{'\n'}) {
		if c := controlIn(bytes.TrimSuffix(line, []byte{'\r'})); c != "" {
			// git status prints the last done and the next lines to the
			// user's terminal as they are: an escape there sets the
			// clipboard (OSC 52), clears the screen or paints a lie.
			out = append(out, "a to-do line holding "+c+", which git status prints to the user's terminal as it is")
			continue
		}
		l := bytes.TrimLeft(line, " \t")
		if len(l) == 0 || !isLetter(l[0]) {
			continue
		}
		word := l
		if i := bytes.IndexAny(l, " \t\r"); i >= 0 {
			word = l[:i]
		}
		if !quietTodo[string(word)] {
			out = append(out, "the to-do line "+quoteCapped(string(bytes.TrimRight(l, "\r"))))
		}
	}
	return out
}

// controlIn names a control character b holds (C0 but tab, DEL, C1 in
// UTF-8), or is "".
func controlIn(b []byte) string {
	for i, c := range b {
		switch {
		case c < 0x20 && c != '\t', c == 0x7f:
			return fmt.Sprintf("the control character %#02x", c)
		case c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			return fmt.Sprintf("the control character U+%04X", rune(b[i+1]))
		}
	}
	return ""
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// strategyRisk is what a strategy file (read_oneliner: one trailing LF,
// and a CR before it, dropped) names when that is not one of git's own.
func strategyRisk(b []byte) string {
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if ownStrategies[s] {
		return ""
	}
	return "the merge strategy " + quoteCapped(s)
}

// applyOptRisks returns what rebase-apply/apply-opt gives git apply, when
// git am goes on, beyond the options git am itself passes there: others
// write where they name (--build-fake-ancestor=PATH writes an index
// there). The file holds shell-quoted words (sq_quote_argv); only words
// quoted plainly, which git's sq_dequote_to_strvec reads as written, are
// read, and anything else is a risk.
func applyOptRisks(b []byte) []string {
	s := strings.Trim(string(b), " \t\r\n")
	if s == "" {
		return nil
	}
	var out []string
	for _, w := range strings.Split(s, " ") {
		v, ok := strings.CutPrefix(w, "'")
		v, ok2 := strings.CutSuffix(v, "'")
		if !ok || !ok2 || strings.ContainsAny(v, "'\\! \t\r\n") || !amApplyOption(v) {
			out = append(out, "the git apply option "+quoteCapped(w))
		}
	}
	return out
}

// amApplyOption reports whether o is one of the options git am passes
// through to git apply (builtin/am.c, OPT_PASSTHRU_ARGV), as
// parse_opt_passthru_argv writes them: none writes outside the work tree.
func amApplyOption(o string) bool {
	switch o {
	case "--ignore-space-change", "--ignore-whitespace", "--reject",
		"--no-ignore-space-change", "--no-ignore-whitespace", "--no-reject":
		return true
	}
	for _, p := range []string{"--whitespace=", "--directory=", "--exclude=", "--include="} {
		if strings.HasPrefix(o, p) {
			return true
		}
	}
	for _, p := range []string{"-C", "-p"} {
		if n, ok := strings.CutPrefix(o, p); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// mergeOptions are the -X options git's merge strategies take
// (merge-ort.c, parse_merge_opt), by name; those ending in "=" take a value.
var mergeOptions = map[string]bool{
	"ours": true, "theirs": true, "subtree": true, "patience": true, "histogram": true,
	"ignore-space-change": true, "ignore-all-space": true, "ignore-space-at-eol": true,
	"ignore-cr-at-eol": true, "renormalize": true, "no-renormalize": true, "no-renames": true,
	"find-renames": true, "subtree=": true, "diff-algorithm=": true, "find-renames=": true,
	"rename-threshold=": true,
}

// mergeOptionRisk is what a strategy option o (as git hands it on, "--"
// dropped) would do beyond a merge option: git's scripted strategies
// (git-merge-resolve, git-merge-octopus) take every word before "--" for a
// merge base and pass it to git read-tree unquoted, through the shell, so
// that --index-output=PATH writes an index at PATH. Only the options git's
// own strategies know pass, with values of letters, digits and . _ / + -
// (no blank, quote or glob for the shell to work on).
func mergeOptionRisk(o string) string {
	name, value, hasValue := strings.Cut(o, "=")
	if hasValue {
		name += "="
	}
	if mergeOptions[name] && strings.Trim(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/+-") == "" {
		return ""
	}
	return "the merge strategy option " + quoteCapped(o)
}

// strategyOptRisks returns what a strategy_opts file would hand the merge
// strategy beyond merge options. Git reads it (sequencer.c,
// parse_strategy_opts) with one trailing newline and one leading space
// dropped, split as split_cmdline splits, which reads quotes and
// backslashes, and "--" dropped from each word. Only words split_cmdline
// reads as written are read here: spaces between them, and each word bare
// or whole in double quotes (as quote_cmdline writes it), with no quote or
// backslash in it; anything else is a risk.
func strategyOptRisks(b []byte) []string {
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	var out []string
	for _, w := range strings.Split(s, " ") {
		if w == "" {
			continue
		}
		v := w
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		if strings.ContainsAny(v, "\"'\\\t\r\n\v\f\x00") {
			out = append(out, "the merge strategy options "+quoteCapped(s))
			continue
		}
		if r := mergeOptionRisk(strings.TrimPrefix(v, "--")); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// opStateRisks returns what an operation state directory would make the
// user's git run or write when it goes on, each said for the model: what
// its decisive files hold, and each entry git keeps no file as.
// sequencer/opts is config-format, listed by git.
func opStateRisks(list lister, e element) []string {
	var out []string
	dir := filepath.Base(e.path)
	for _, name := range sortedNames(e.files) {
		b := e.files[name]
		switch stateKind(dir, name) {
		case stateTodo:
			out = append(out, todoRisks(b)...)
		case stateStrategy:
			if r := strategyRisk(b); r != "" {
				out = append(out, r)
			}
		case stateStrategyOpts:
			out = append(out, strategyOptRisks(b)...)
		case stateApplyOpt:
			out = append(out, applyOptRisks(b)...)
		case stateNumber:
			if n := strings.TrimSuffix(string(b), "\n"); n == "" || strings.Trim(n, "0123456789") != "" {
				out = append(out, "the count "+quoteCapped(name)+" holding "+quoteCapped(n)+", not a number, which git's prompt (__git_ps1) puts into the shell's prompt as it is")
			}
		case stateOpts:
			entries, err := list(b)
			if err != nil {
				out = append(out, "options git could not read ("+err.Error()+")")
			}
			for _, en := range entries {
				if en.Section != "options" || en.Subsection != "" {
					continue
				}
				switch {
				case en.Name == "strategy" && !ownStrategies[en.Value]:
					out = append(out, "the merge strategy "+quoteCapped(en.Value))
				case en.Name == "strategy-option":
					if r := mergeOptionRisk(en.Value); r != "" {
						out = append(out, r)
					}
				}
			}
		}
	}
	for _, en := range e.entries {
		out = append(out, "an entry git does not write there, "+quoteCapped(en.name))
	}
	return out
}

func sortedNames(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// judgeOpState says why an operation state directory would make the
// user's git run something planted, or "": a risk that prev, the trusted
// version of the same directory (the zero element if none), did not hold.
// The user's own rebase --exec, or own strategy, continued in a call, so
// stays.
func judgeOpState(list lister, e, prev element) string {
	if !e.id.exists() {
		return ""
	}
	had := map[string]bool{}
	if prev.files != nil {
		for _, r := range opStateRisks(list, prev) {
			had[r] = true
		}
	}
	for _, r := range opStateRisks(list, e) {
		if !had[r] {
			return "it holds " + r
		}
	}
	return ""
}

// judgeRemotes says why a remotes/ or branches/ directory would send the
// user's git elsewhere, or "": an entry that prev, the trusted version of
// the same directory (the zero element if none), did not hold as it is
// now. Git never writes there itself (git init's template makes branches/
// empty).
func judgeRemotes(e, prev element) string {
	switch {
	case !e.id.exists():
		return ""
	case !e.id.isDir():
		return "it is not a directory"
	}
	had := map[string]ident{}
	for _, en := range prev.entries {
		had[en.name] = en.id
	}
	for _, en := range e.entries {
		if id, ok := had[en.name]; !ok || id != en.id {
			return "it holds " + quoteCapped(en.name)
		}
	}
	return ""
}

// quoteCapped quotes s, planted text, for a note: at most 120 bytes of it.
func quoteCapped(s string) string {
	const max = 120
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
