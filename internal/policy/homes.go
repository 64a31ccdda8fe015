package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Private homes live in StateDir/homes, one per workspace; beside each, a
// file NAME.workspace holds the workspace's path, so that a home whose
// workspace is gone can be found and removed (HomesPrune). It is outside
// the home: commands cannot change it.

// homeRecord is the file beside a private home that names its workspace.
func homeRecord(home string) string { return home + ".workspace" }

// HomeInfo is one private home.
type HomeInfo struct {
	Dir       string
	Workspace string // "" when no record says (made by an older version)
	Bytes     int64
	LastUsed  time.Time // when a server last started for its workspace
	Orphan    bool      // its workspace no longer exists
}

// Homes lists the private homes in stateDir, oldest use first.
func Homes(stateDir string) ([]HomeInfo, error) {
	dir := filepath.Join(stateDir, "homes")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []HomeInfo
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		h := HomeInfo{Dir: filepath.Join(dir, e.Name())}
		if b, err := os.ReadFile(homeRecord(h.Dir)); err == nil {
			h.Workspace = strings.TrimSpace(string(b))
			if fi, err := os.Stat(homeRecord(h.Dir)); err == nil {
				h.LastUsed = fi.ModTime()
			}
			if _, err := os.Stat(h.Workspace); errors.Is(err, fs.ErrNotExist) {
				h.Orphan = true
			}
		}
		h.Bytes = HomeSize(h.Dir)
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastUsed.Before(out[j].LastUsed) })
	return out, nil
}

// HomeSize is how many bytes the files below dir take.
func HomeSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// HomesPrune removes the private homes whose workspace no longer exists,
// and returns them. A home with no record is kept: nothing says whose it is.
func HomesPrune(stateDir string) ([]HomeInfo, error) {
	homes, err := Homes(stateDir)
	if err != nil {
		return nil, err
	}
	var removed []HomeInfo
	for _, h := range homes {
		if !h.Orphan {
			continue
		}
		if err := removeAll(h.Dir); err != nil {
			return removed, fmt.Errorf("remove %s: %w", h.Dir, err)
		}
		os.Remove(homeRecord(h.Dir))
		removed = append(removed, h)
	}
	return removed, nil
}

// removeAll removes dir and what is below it, making read-only directories
// writable first (Go's module cache makes its files and directories
// read-only). It follows no symlink.
func removeAll(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// recordHome notes, beside a private home, whose workspace it serves; its
// time says when it was last used. A record that already says so only has
// its time set: rewriting it would truncate it first, which on ext4 frees
// and discards its block, and every start would wait for the disk.
func recordHome(home, ws string) {
	rec, want := homeRecord(home), ws+"\n"
	if b, err := os.ReadFile(rec); err == nil && string(b) == want {
		now := time.Now()
		if os.Chtimes(rec, now, now) == nil {
			return
		}
	}
	os.WriteFile(rec, []byte(want), 0o600)
}

// Discard removes the private home this start made, if it is still empty:
// a start that fails leaves none behind.
func (p *Policy) Discard() {
	if p.privateHomeMade && p.PrivateHome != "" {
		if os.Remove(p.PrivateHome) == nil {
			os.Remove(homeRecord(p.PrivateHome))
		}
	}
}
