package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// A placeholder stands in, inside a trusted git directory, for a path git
// reads at once if it appears (hooks/, commondir), so that a command cannot
// create it while a call runs: it is mounted read-only like the rest. It
// exists only while calls that need it run; an empty hooks/ and a commondir
// holding "." are inert for git should the server be killed before it
// removes them. Nothing is ever created in a work tree.
type placeholder struct {
	root, path string // host paths
	dir        bool
	content    string
	id         ident // as created
	users      int
}

// placeholders counts the calls using each placeholder.
type placeholders map[string]*placeholder

// hold makes sure the placeholder for path exists and counts one more user.
// It reports false when something other than an absent path is in the way.
func (ps placeholders) hold(root, path string, dir bool, content string) (bool, error) {
	if p := ps[path]; p != nil {
		p.users++
		return true, nil
	}
	id, err := createPlaceholder(root, path, dir, content)
	if err != nil || !id.exists() {
		return false, err
	}
	ps[path] = &placeholder{root: root, path: path, dir: dir, content: content, id: id, users: 1}
	return true, nil
}

// release counts one user less, and removes the placeholder with its last.
func (ps placeholders) release(path string) {
	p := ps[path]
	if p == nil {
		return
	}
	p.users--
	if p.users > 0 {
		return
	}
	delete(ps, path)
	removePlaceholder(p)
}

// pristine reports whether path is a placeholder still as made.
func (ps placeholders) pristine(path string, id ident) bool {
	p := ps[path]
	return p != nil && p.id == id
}

// createPlaceholder creates path below root unless something is there,
// without following any symlink. It returns what it created, or the zero
// ident if something was there.
func createPlaceholder(root, path string, dir bool, content string) (ident, error) {
	parent, name, err := openParent(root, path)
	if err != nil {
		return ident{}, err
	}
	defer unix.Close(parent)
	if dir {
		err := unix.Mkdirat(parent, name, 0o755)
		if errors.Is(err, unix.EEXIST) {
			return ident{}, nil
		}
		if err != nil {
			return ident{}, fmt.Errorf("mkdir %q: %w", path, err)
		}
	} else {
		fd, err := unix.Openat(parent, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if errors.Is(err, unix.EEXIST) {
			return ident{}, nil
		}
		if err != nil {
			return ident{}, fmt.Errorf("create %q: %w", path, err)
		}
		f := os.NewFile(uintptr(fd), path)
		_, err = f.WriteString(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			unix.Unlinkat(parent, name, 0)
			return ident{}, fmt.Errorf("write %q: %w", path, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return ident{}, fmt.Errorf("lstat %q: %w", path, err)
	}
	return identOf(&st), nil
}

// removePlaceholder removes p only if it still is what was created: an
// empty directory, or a file holding exactly its content.
func removePlaceholder(p *placeholder) {
	parent, name, err := openParent(p.root, p.path)
	if err != nil {
		return
	}
	defer unix.Close(parent)
	if p.dir {
		unix.Unlinkat(parent, name, unix.AT_REMOVEDIR) // fails, harmlessly, if something is inside
		return
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), p.path)
	var st unix.Stat_t
	ok := unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
	b, err := io.ReadAll(io.LimitReader(f, int64(len(p.content))+1))
	f.Close()
	if ok && err == nil && bytes.Equal(b, []byte(p.content)) {
		unix.Unlinkat(parent, name, 0)
	}
}
