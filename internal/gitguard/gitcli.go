package gitguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// maxConfigBytes caps a config file the guard hands to git. Git reads any
// size; a config this large is not one a person wrote, and fails closed.
const maxConfigBytes = 4 << 20

// gitTimeout bounds one run of git.
const gitTimeout = 5 * time.Second

// entry is one config entry as git lists it.
type entry struct {
	Section    string // lowercase
	Subsection string // as written ("" if none); git lowercases the legacy [a.B] form itself
	Name       string // lowercase
	Value      string
	HasValue   bool // false for a bare key ("[core] bare"), which git reads as true
}

// key is the entry's name as git config prints it.
func (e entry) key() string {
	if e.Subsection != "" {
		return e.Section + "." + e.Subsection + "." + e.Name
	}
	return e.Section + "." + e.Name
}

// lister lists a config file's entries. The guard's is the host's git;
// tests may replace it.
type lister func(content []byte) ([]entry, error)

// gitLister returns the lister that asks the git at path, which must be
// the one the user's own tools run. It gives git the content on stdin, so
// git opens nothing a command controls, with an environment that makes it
// read no other config and find no repository.
func gitLister(path string) lister {
	return func(content []byte) ([]entry, error) {
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, "config", "--file", "-", "--no-includes", "--list", "--null")
		cmd.Dir = "/"
		cmd.Env = []string{
			"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_DIR=/nonexistent", "GIT_CEILING_DIRECTORIES=/",
		}
		cmd.Stdin = bytes.NewReader(content)
		var out, errOut bytes.Buffer
		cmd.Stdout = &limitedBuffer{buf: &out, max: 4*len(content) + 4096}
		cmd.Stderr = &limitedBuffer{buf: &errOut, max: 4096}
		cmd.WaitDelay = time.Second
		if err := cmd.Run(); err != nil {
			// git's message names the line, never the content: keep it.
			msg := strings.TrimSpace(errOut.String())
			msg, _, _ = strings.Cut(msg, "\n")
			if msg == "" {
				msg = err.Error()
			}
			return nil, fmt.Errorf("git config: %s", msg)
		}
		return parseListing(out.Bytes())
	}
}

// noGit is the lister when the host has no git: no config can be judged
// harmless, so every one that changed is made harmless.
func noGit(content []byte) ([]entry, error) {
	return nil, errors.New("no git on this machine to read it")
}

// parseListing reads "git config --list --null": records ending in NUL,
// each "key\nvalue", or just "key" for a bare boolean.
func parseListing(b []byte) ([]entry, error) {
	var out []entry
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil, errors.New("git config: unterminated record")
		}
		rec := b[:i]
		b = b[i+1:]
		k, v, hasValue := bytes.Cut(rec, []byte{'\n'})
		key := string(k)
		first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
		if first <= 0 || last == len(key)-1 {
			return nil, fmt.Errorf("git config: unexpected key %q", key)
		}
		e := entry{Section: key[:first], Name: key[last+1:], Value: string(v), HasValue: hasValue}
		if first != last {
			e.Subsection = key[first+1 : last]
		}
		out = append(out, e)
	}
	return out, nil
}

// limitedBuffer keeps at most max bytes and fails the write past that, so a
// runaway git cannot grow the server.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		return 0, errors.New("output too large")
	}
	return l.buf.Write(p)
}
