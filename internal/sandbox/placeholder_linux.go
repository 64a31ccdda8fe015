package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// placeholderParent opens the directory that holds pr.Path, beneath pr.Root
// and without following any symlink: a command can replace a directory of
// its workspace with a symlink between calls, and the server must never
// create or remove anything outside the writable root on its behalf.
func placeholderParent(pr protection) (fd int, name string, err error) {
	rel, err := filepath.Rel(pr.Root, pr.Path)
	if err != nil || rel == "." || rel == ".." || filepath.IsAbs(rel) || len(rel) > 2 && rel[:3] == "../" {
		return -1, "", bug(fmt.Errorf("placeholder %q is not below %q", pr.Path, pr.Root))
	}
	root, err := unix.Open(pr.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("open %q: %w", pr.Root, err)
	}
	dir := filepath.Dir(rel)
	if dir == "." {
		return root, rel, nil
	}
	defer unix.Close(root)
	fd, err = unix.Openat2(root, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return -1, "", fmt.Errorf("%s: a symbolic link is in the way", filepath.Join(pr.Root, dir))
	}
	if err != nil {
		return -1, "", fmt.Errorf("open %q: %w", filepath.Join(pr.Root, dir), err)
	}
	return fd, filepath.Base(rel), nil
}

// createPlaceholder creates pr unless something is there by now. It reports
// whether it created it.
func createPlaceholder(pr protection) (bool, error) {
	parent, name, err := placeholderParent(pr)
	if err != nil {
		return false, err
	}
	defer unix.Close(parent)
	if pr.Dir {
		err := unix.Mkdirat(parent, name, 0o755)
		if errors.Is(err, unix.EEXIST) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("mkdir %q: %w", pr.Path, err)
		}
		return true, nil
	}
	fd, err := unix.Openat(parent, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.EEXIST) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create %q: %w", pr.Path, err)
	}
	f := os.NewFile(uintptr(fd), pr.Path)
	_, err = f.WriteString(pr.Content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(parent, name, 0)
		return false, fmt.Errorf("write %q: %w", pr.Path, err)
	}
	return true, nil
}

// removePlaceholder removes pr only if it still is what was created: an
// empty directory, or a file holding exactly its content.
func removePlaceholder(pr protection) {
	parent, name, err := placeholderParent(pr)
	if err != nil {
		return
	}
	defer unix.Close(parent)
	if pr.Dir {
		unix.Unlinkat(parent, name, unix.AT_REMOVEDIR) // fails, harmlessly, if something was put inside
		return
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), pr.Path)
	b, err := io.ReadAll(io.LimitReader(f, int64(len(pr.Content))+1))
	f.Close()
	if err == nil && bytes.Equal(b, []byte(pr.Content)) {
		unix.Unlinkat(parent, name, 0)
	}
}
