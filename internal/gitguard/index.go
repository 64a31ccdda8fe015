package gitguard

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The index is not inert. Git checks a path when it adds it to the index
// (verify_path), never when it reads .git/index from disk, and then takes
// every name in it from the top of the work tree: an entry named
// ".git/hooks/pre-commit", "../x" or "/home/u/.ssh/id_rsa" is written there
// by the user's git checkout -- . or git restore, and read (then hashed
// into the objects, and committed) by git add -A or git commit -a. So an
// index made or changed in a call is judged when it ends, by the host's
// git: it lists the index, from a copy read safely, in a scratch git
// directory that holds nothing else, and then adds every name it listed to
// a fresh index, which runs git's own verify_path on each. A name git
// refuses there is one it would never have put in an index itself.

// maxListingBytes caps what git lists of an index (a name and a few
// fields an entry): an index of a million files lists in about 110 MiB,
// and one whose names index.version 4 compresses cannot make it more.
const maxListingBytes = 256 << 20

// maxIndexBytes caps an index the guard copies for git to read. A
// repository of a million files has an index of about 100 MiB.
const maxIndexBytes = 256 << 20

// gitMemoryKiB bounds the address space of each run of git on what a
// command wrote (1 GiB): git read-tree of a repository of a million files
// needs a few hundred MiB.
const gitMemoryKiB = 1 << 20

// errTimeout is a run of git that did not end in time: what it read
// could not be checked, which is no verdict on it.
var errTimeout = errors.New("it took longer than the sandbox gives it")

// indexTimeout bounds each run of git on an index.
const indexTimeout = 20 * time.Second

// indexChecker says why the index at path (with the shared index files
// of a split index beside it, in shared) would make the user's git write
// or read outside its work tree, or "" when git takes every name in it for
// one it could have added itself. sha256 says the repository's objects
// are named with SHA-256.
type indexChecker func(path string, shared []string, sha256 bool) string

// indexElement reads gitdir's index: its identity, and that of the shared
// index files of a split index (gitdir/sharedindex.*), which git reads
// with it and which a command could rewrite in place.
func (r *resolver) indexElement(gitdir string) element {
	path := filepath.Join(gitdir, "index")
	e := element{role: roleIndex, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
		return e
	case id.isLink():
		e.id = id
		e.odd = "it is a symbolic link"
		return e
	case id.exists() && !id.isReg():
		e.id = id
		e.odd = "it is not a regular file"
		return e
	}
	e.id = id
	ents, err := r.sharedIndexes(gitdir)
	if err != nil {
		e.odd = err.Error()
		return e
	}
	e.entries = ents
	if len(ents) > 0 {
		e.id.Sum = listingSum(ents)
	}
	return e
}

// sharedIndexes lists gitdir's sharedindex.* entries with what each is.
func (r *resolver) sharedIndexes(gitdir string) ([]dirEntry, error) {
	return r.gitdirEntries(gitdir, func(name string) bool { return strings.HasPrefix(name, "sharedindex.") })
}

// gitdirEntries lists the entries of gitdir that keep names, with what
// each is (statEach), reading the listing again only when the directory
// changed (as hooks).
func (r *resolver) gitdirEntries(gitdir string, keep func(string) bool) ([]dirEntry, error) {
	id, err := lstatIdent(gitdir)
	if err != nil || !id.isDir() {
		return nil, err
	}
	id.Size = 0
	key := gitdir + "\x00listing"
	var all []dirEntry
	once := r.gitdirOnce
	if once != nil && once.path != gitdir {
		once = nil
	}
	if once != nil && once.all != nil && once.id == id {
		all = once.all
	} else if c, ok := r.dirs[key]; ok && c.id == id && time.Now().UnixNano()-id.Ctime > int64(time.Second) {
		all = c.ents
	} else {
		l, lid, err := listDir(gitdir, maxGitdirEntries)
		if err != nil {
			return nil, err
		}
		lid.Size = 0
		id, all = lid, l
		if r.dirs != nil {
			r.dirs[key] = cachedDir{id: id, ents: l}
		}
	}
	if r.dirs != nil {
		r.used[key] = true
	}
	if once != nil {
		once.id, once.all = id, all
	}
	var ents []dirEntry
	for _, en := range all {
		if keep(en.name) {
			ents = append(ents, en)
		}
	}
	if len(ents) == 0 {
		return nil, nil
	}
	if err := statEach(gitdir, id, ents); err != nil {
		return nil, err
	}
	return ents, nil
}

// maxGitdirEntries bounds a git directory's listing: git keeps a score of
// entries there.
const maxGitdirEntries = 100_000

// judgeIndex says why an index element would make the user's git act
// outside the work tree, or "".
func (g *Guard) judgeIndex(e element, els []element) string {
	if !e.id.exists() {
		return ""
	}
	var shared []string
	for _, en := range e.entries {
		shared = append(shared, filepath.Join(filepath.Dir(e.path), en.name))
	}
	return g.checkIndex(e.path, shared, g.sha256Objects(els))
}

// sha256Objects reports whether the repository whose elements are els
// names its objects with SHA-256 (extensions.objectFormat in its config,
// as git lists it).
func (g *Guard) sha256Objects(els []element) bool {
	for _, e := range els {
		if e.role != roleConfig || !e.main || e.content == nil {
			continue
		}
		entries, err := g.listFor(e)(e.content)
		if err != nil {
			return false
		}
		for _, en := range entries {
			if en.Section == "extensions" && en.Subsection == "" && en.Name == "objectformat" {
				return strings.EqualFold(en.Value, "sha256")
			}
		}
	}
	return false
}

// gitIndexChecker returns the checker that asks the git at path.
func gitIndexChecker(path string) indexChecker {
	return func(index string, shared []string, sha256 bool) string {
		why, err := checkIndexWithGit(path, index, shared, sha256)
		if err != nil {
			return "git could not read it (" + err.Error() + ")"
		}
		return why
	}
}

// noIndexGit is the checker when the host has no git.
func noIndexGit(string, []string, bool) string {
	return "there is no git on this machine to read it"
}

// checkIndexWithGit copies the index (and its shared index files) into a
// scratch git directory and has git list it there, then add each name it
// listed to a fresh index. An error is a failure to read it; a refusal of
// a name is the verdict.
func checkIndexWithGit(git, index string, shared []string, sha256 bool) (string, error) {
	tmp, err := os.MkdirTemp("", "nanosandbox-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	format := "[core]\n\trepositoryformatversion = 0\n"
	if sha256 {
		format = "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectFormat = sha256\n"
	}
	// scratch makes a git directory of nothing but an index (the file at
	// from) in dir, and returns it and its work tree.
	scratch := func(dir, from string) (gitdir, work string, size int64, err error) {
		gitdir, work = filepath.Join(dir, "git"), filepath.Join(dir, "work")
		for _, d := range []string{dir, gitdir, work, filepath.Join(gitdir, "objects"), filepath.Join(gitdir, "refs"), filepath.Join(gitdir, "info")} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return "", "", 0, err
			}
		}
		for name, content := range map[string]string{
			"HEAD": "ref: refs/heads/main\n", "config": format, "info/sparse-checkout": "/*\n!/*/\n",
		} {
			if err := os.WriteFile(filepath.Join(gitdir, name), []byte(content), 0o600); err != nil {
				return "", "", 0, err
			}
		}
		size, err = copyRegular(from, filepath.Join(gitdir, "index"), maxIndexBytes)
		return gitdir, work, size, err
	}
	gitdir, work, size, err := scratch(filepath.Join(tmp, "main"), index)
	if err != nil {
		return "", err
	}
	// A split index's shared part is the one git names, when it needs
	// it: copied then, and the listing read again.
	byName := map[string]string{}
	for _, p := range shared {
		byName[filepath.Base(p)] = p
	}
	copied := map[string]bool{}
	needShared := func(err error) bool {
		name := sharedIndexRe().FindString(err.Error())
		src, ok := byName[name]
		if name == "" || !ok || copied[name] {
			return false
		}
		copied[name] = true
		n, err := copyRegular(src, filepath.Join(gitdir, name), maxIndexBytes)
		if err != nil {
			return false
		}
		size += n
		return true
	}

	// list lists the index of gitdir into the file at path, as a whole
	// index or a sparse one, read with threads threads. Git reads each
	// index file one of three ways by its thread count (read-cache.c,
	// do_read_index): 1, everything in order; 2, the entries in order and
	// the extensions from where the index's EOIE extension says they
	// begin; 3 or more, the entries too from where its IEOT extension
	// says they are.
	list := func(gitdir, work, path string, sparse bool, threads int) error {
		env := []string{
			"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_DIR=" + gitdir, "GIT_WORK_TREE=" + work,
		}
		for try := 0; ; try++ {
			os.Remove(path)
			out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			args := []string{"-c", "index.threads=" + strconv.Itoa(threads)}
			if sparse {
				// A sparse index stays sparse with a cone of the top
				// directory alone.
				args = append(args, "-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=true", "-c", "index.sparse=true")
			}
			args = append(args, "ls-files", "-z", "--stage")
			if sparse {
				args = append(args, "--sparse")
			}
			// A listing names each path once, whole: more than the index
			// when index.version 4 has compressed the names.
			stderr, err := runGit(git, "ls-files", work, env, nil, &limitedWriter{w: out, max: min(16*size+1<<20, maxListingBytes)}, args...)
			out.Close()
			if err == nil && stderr != "" {
				// Git says what it could not read, and goes on without it.
				err = errors.New(stderr)
			}
			if err != nil && try < 2 && needShared(err) {
				continue
			}
			return err
		}
	}
	// agree lists the index of gitdir in the three ways, into listing
	// and beside it: the user's git may read it in any (index.threads,
	// scalar's repositories), each file of a split index its own way.
	agree := func(gitdir, work, listing string, sparse bool) (string, error) {
		// Git reads with threads only from where an EOIE extension
		// says, found by its signature at a place at the end: a file
		// without those four bytes anywhere reads in order however
		// many threads read it, and costs no more runs of git.
		if has, err := fileHolds(filepath.Join(gitdir, "index"), []byte("EOIE")); err != nil || !has {
			return "", err
		}
		for _, threads := range []int{2, 4} {
			other := listing + "." + strconv.Itoa(threads)
			if err := list(gitdir, work, other, sparse, threads); err != nil {
				return "it reads differently with threads (" + quoteCapped(err.Error()) + ")", nil
			}
			if same, err := sameFiles(listing, other); err != nil {
				return "", err
			} else if !same {
				return "it holds other entries for a git that reads it with threads (index.threads) than for one that reads it in order", nil
			}
		}
		return "", nil
	}
	// Read as a whole index first: git expands a sparse one from objects,
	// which the scratch directory does not have, and says so. Then as a
	// sparse index, which git keeps as it is: read so, a whole index is
	// made sparse where it can be, from objects too.
	listing := filepath.Join(tmp, "listing")
	sparse := false
	if err := list(gitdir, work, listing, false, 1); err != nil {
		if err2 := list(gitdir, work, listing, true, 1); err2 != nil {
			return "", err
		}
		sparse = true
	}
	if why, err := agree(gitdir, work, listing, sparse); why != "" || err != nil {
		return why, err
	}
	// A shared part is read as an index of its own, whichever way the
	// main part is: each must read the same in every way by itself.
	for name := range copied {
		sg, sw, _, err := scratch(filepath.Join(tmp, name), filepath.Join(gitdir, name))
		if err != nil {
			return "", err
		}
		own := filepath.Join(tmp, name+".listing")
		if err := list(sg, sw, own, sparse, 1); err != nil {
			return "its shared part " + quoteCapped(name) + " does not read as an index (" + quoteCapped(err.Error()) + ")", nil
		}
		if why, err := agree(sg, sw, own, sparse); why != "" || err != nil {
			if why != "" {
				why = "its shared part " + quoteCapped(name) + " " + strings.TrimPrefix(why, "it ")
			}
			return why, err
		}
	}
	names := filepath.Join(tmp, "names")
	if err := fileEntries(listing, names); err != nil {
		return "", err
	}
	in, err := os.Open(names)
	if err != nil {
		return "", err
	}
	defer in.Close()
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_DIR=" + gitdir, "GIT_WORK_TREE=" + work, "GIT_INDEX_FILE=" + filepath.Join(tmp, "check"),
	}
	stderr, err := runGit(git, "update-index", work, env, in, io.Discard,
		"-c", "core.protectNTFS=true", "-c", "core.protectHFS=true",
		"-c", "index.sparse=false", "-c", "core.sparseCheckout=false",
		"update-index", "-z", "--index-info")
	if errors.Is(err, errTimeout) {
		return "", err
	}
	if err != nil || stderr != "" {
		msg := stderr
		if msg == "" {
			msg = err.Error()
		}
		return "it names a path git refuses to have in an index (" + quoteCapped(msg) + ")", nil
	}
	return "", nil
}

// sharedIndexRe finds the shared index file git names when it cannot
// open it. Compiled when first needed: its repetition makes it the
// costliest thing this package would otherwise do as the binary starts.
var sharedIndexRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`sharedindex\.[0-9a-f]{40,64}`)
})

// sameFiles reports whether the files a and b, which the guard wrote,
// hold the same bytes, read a block at a time.
func sameFiles(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, errA := io.ReadFull(fa, ba)
		nb, errB := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		switch {
		case errA == io.EOF || errA == io.ErrUnexpectedEOF:
			return errB == io.EOF || errB == io.ErrUnexpectedEOF, nil
		case errA != nil:
			return false, errA
		case errB != nil:
			return false, errB
		}
	}
}

// fileEntries rewrites git ls-files -z --stage output (the file from)
// for git update-index -z --index-info, which reads the same format, into
// the file to, with each sparse directory ("040000 OID 0\tdir/") given as
// a file of its name: update-index skips directories without checking
// them, and a directory's name is checked as a file's is but for its final
// slash.
func fileEntries(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	r := bufio.NewReader(in)
	for {
		rec, err := r.ReadBytes(0)
		if len(rec) > 0 && rec[len(rec)-1] == 0 {
			rec = rec[:len(rec)-1]
			if name, ok := bytes.CutPrefix(rec, []byte("040000 ")); ok {
				if bytes.IndexByte(name, '\t') < 0 || !bytes.HasSuffix(name, []byte("/")) {
					out.Close()
					return fmt.Errorf("git ls-files: unexpected record %s", quoteCapped(string(rec)))
				}
				w.WriteString("100644 ")
				rec = bytes.TrimSuffix(name, []byte("/"))
			}
			w.Write(rec)
			w.WriteByte(0)
		} else if len(rec) > 0 {
			out.Close()
			return fmt.Errorf("git ls-files: unterminated record %s", quoteCapped(string(rec)))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fileHolds reports whether the file at path holds b anywhere.
func fileHolds(path string, b []byte) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	keep := 0 // bytes carried over from the last read: a match may straddle two
	for {
		n, err := f.Read(buf[keep:])
		if bytes.Contains(buf[:keep+n], b) {
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if keep+n >= len(b)-1 {
			keep = copy(buf, buf[keep+n-(len(b)-1):keep+n])
		} else {
			keep += n
		}
	}
}

// runGit runs git with args in dir, with env only, and returns the first
// line of what it said on stderr; name says which run failed.
func runGit(git, name, dir string, env []string, stdin io.Reader, stdout io.Writer, args ...string) (string, error) {
	return runGitFor(indexTimeout, git, name, dir, env, stdin, stdout, args...)
}

// runGitFor is runGit, bounded by limit.
func runGitFor(limit time.Duration, git, name, dir string, env []string, stdin io.Reader, stdout io.Writer, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	// No transport, ever: a repository a call made can be a partial
	// clone whose promisor remote git fetches a missing object from
	// (read-tree HEAD of a tree that is not there), which sent the host
	// to a URL the command chose, its path holding what the command
	// read. Extensions cannot be overridden with -c; every protocol can
	// be refused (lazy fetches too), and newer gits skip them outright.
	args = append([]string{"-c", "protocol.allow=never"}, args...)
	env = append(env[:len(env):len(env)], "GIT_NO_LAZY_FETCH=1")
	cmd := exec.CommandContext(ctx, git, args...)
	if runtime.GOOS == "linux" {
		// What git reads here a command wrote: an index, or a tree that
		// expands to billions of entries (read-tree). Its address space
		// is bounded as the command's memory is not, by the shell, which
		// then becomes git (where the server's own hard limits are lower
		// already, those hold): the program in C where it was built and
		// git's path is absolute (an exec of a few KiB), else the
		// shell's ulimit (about 0.9 ms more per run).
		if limit := limitProgram(); limit != "" && filepath.IsAbs(git) {
			cmd = exec.CommandContext(ctx, limit, append([]string{strconv.Itoa(gitMemoryKiB << 10), strconv.Itoa(maxListingBytes), git}, args...)...)
			cmd.Args[0] = "nanosandbox-mcp: git limits"
		} else {
			cmd = exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `ulimit -v ` + strconv.Itoa(gitMemoryKiB) + ` 2>/dev/null; ulimit -f ` + strconv.Itoa(maxListingBytes/512) + ` 2>/dev/null; exec "$0" "$@"`, git}, args...)...)
		}
	}
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var errOut bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &errOut, max: 4096}
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	msg, _, _ := strings.Cut(strings.TrimSpace(errOut.String()), "\n")
	if err != nil && ctx.Err() != nil {
		return "", fmt.Errorf("git %s: %w", name, errTimeout)
	}
	if err != nil {
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", name, msg)
	}
	return msg, nil
}

// rebuildIndex writes gitdir's index anew from its HEAD, as git read-tree
// HEAD does (git reset without touching refs or the work tree), for a
// repository whose index was moved aside. Git runs there with nothing of
// the user's but the repository's own config, which is trusted (the index
// of a repository made in a call goes with the whole repository), and
// with core.fsmonitor off: read-tree runs no hook.
func (g *Guard) rebuildIndex(gitdir string) error {
	if g.cfg.Git == "" {
		return errors.New("no git on this machine")
	}
	began := time.Now()
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_NO_REPLACE_OBJECTS=1",
		"GIT_DIR=" + gitdir,
	}
	// Packs are read through small windows, which fit the bound on its
	// memory (runGit) however large they are.
	// No hook: git runs post-index-change on every index it writes, and
	// a repository's hooks can lie where commands write (a --writable
	// hooks path).
	_, err := runGit(g.cfg.Git, "read-tree", gitdir, env, nil, io.Discard, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
		"-c", "core.packedGitWindowSize=32m", "-c", "core.packedGitLimit=256m", "-c", "core.deltaBaseCacheLimit=32m", "read-tree", "HEAD")
	if err != nil {
		// Killed at its bound, git leaves its lock: the user's git
		// would then refuse to write an index at all. Only the lock
		// made since this run began, as git makes it (empty).
		lock := filepath.Join(gitdir, "index.lock")
		if id, lerr := lstatIdent(lock); lerr == nil && id.isReg() && id.Size == 0 && id.Mtime >= began.Add(-time.Second).UnixNano() {
			os.Remove(lock)
		}
		return err
	}
	if id, err := lstatIdent(filepath.Join(gitdir, "index")); err == nil {
		g.rebuilt[filepath.Join(gitdir, "index")] = id
	}
	return nil
}

// removeStaleScratch removes the scratch directories of index checks that
// a killed server left in the temporary directory: those of this user,
// made more than an hour ago (a check ends within a minute), never
// through a symlink. With a stamp file (in the server's state), it looks
// at most once an hour, as that file's time says: the temporary directory
// may hold thousands of names, and a one-shot command starts a guard every
// time.
func removeStaleScratch(stamp string) {
	if stamp != "" {
		if fi, err := os.Lstat(stamp); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) < time.Hour {
			return
		}
		os.Remove(stamp)
		if f, err := os.OpenFile(stamp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "nanosandbox-index-*"))
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < time.Hour {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Getuid() {
			os.RemoveAll(d)
		}
	}
}

// copyRegular copies the regular file at src (no symlink followed, no
// blocking) to a new file dst, at most max bytes, and returns its size.
func copyRegular(src, dst string, max int64) (int64, error) {
	fd, err := openNoSymlinks(src, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		return 0, err
	}
	in := os.NewFile(uintptr(fd), src)
	defer in.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("fstat %q: %w", src, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, fmt.Errorf("%w: %s is not a regular file", errOdd, src)
	}
	if st.Size > max {
		return 0, fmt.Errorf("%w: %s is larger than %d bytes", errOdd, src, max)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, max+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("copy %q: %w", src, err)
	}
	if n > max {
		return 0, fmt.Errorf("%w: %s is larger than %d bytes", errOdd, src, max)
	}
	return n, nil
}

// limitedWriter passes at most max bytes to w and fails the write past
// that.
type limitedWriter struct {
	w   io.Writer
	n   int64
	max int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n+int64(len(p)) > l.max {
		return 0, errors.New("output too large")
	}
	l.n += int64(len(p))
	return l.w.Write(p)
}
