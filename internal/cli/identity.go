package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitconfig"
)

// gitIdentity reads user.name and user.email as git would for the
// workspace, so commits made inside the sandbox carry the user's identity
// without the rest of ~/.gitconfig (which can hold tokens). git is the git
// the server may run (policy.HostProgram), or "": where the config needs
// git itself to be read and there is none, the identity is not read.
func gitIdentity(dir, git string) (name, email string) {
	if n, e, ok := readIdentity(dir); ok {
		return n, e
	}
	if git == "" {
		return "", ""
	}
	return askGit(git, dir)
}

// gitEnvRules are the variables that change which config files git reads:
// with any of them set, git itself is asked (with them: askGit passes on
// every variable of gitConfigVars).
var gitEnvRules = []string{"GIT_CONFIG", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"}

// readIdentity reads the config files git would, in git's order (system,
// global, the repository's), without starting git. It gives up (ok false)
// where git's own rules are more than this reads: a variable of
// gitEnvRules, an include, or a repository behind a "gitdir:" file.
func readIdentity(dir string) (name, email string, ok bool) {
	for _, v := range gitEnvRules {
		if _, set := os.LookupEnv(v); set {
			return "", "", false
		}
	}
	var files []string
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		files = append(files, "/etc/gitconfig")
	}
	if g, set := os.LookupEnv("GIT_CONFIG_GLOBAL"); set {
		files = append(files, g)
	} else {
		home, _ := os.UserHomeDir()
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if xdg == "" && home != "" {
			xdg = filepath.Join(home, ".config")
		}
		if xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(filepath.Join(d, ".git"))
		if err == nil {
			if !fi.IsDir() {
				return "", "", false
			}
			files = append(files, filepath.Join(d, ".git", "config"))
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, f := range files {
		b, err := readSmall(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", "", false
		}
		entries := gitconfig.Parse(b)
		if gitconfig.HasIncludes(entries) {
			return "", "", false
		}
		for _, e := range entries {
			switch e.Name() {
			case "user.name":
				name = e.Value
			case "user.email":
				email = e.Value
			}
		}
	}
	return name, email, true
}

// askGit runs git config, for the cases readIdentity leaves to git. git
// runs in the workspace, so that includeIf "gitdir:" conditions match as
// for the commands' git, and sees only the variables that say where the
// user's own config files are: none that makes it run another program (a
// pager, an editor, GIT_EXEC_PATH, a PATH holding the workspace) or look
// for the repository elsewhere than the commands' git does (GIT_DIR, ...).
// What the workspace's repository holds is a command's: git only reads
// it, for at most two seconds, and its answer is capped.
func askGit(git, dir string) (name, email string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "--no-pager", "config", "--includes", "--get-regexp", `^user\.(name|email)$`)
	cmd.Dir = dir
	cmd.Env = gitConfigEnv(os.Environ())
	var out bytes.Buffer
	cmd.Stdout = &cappedBuffer{buf: &out, max: 1 << 20}
	cmd.WaitDelay = time.Second
	if cmd.Run() != nil {
		return "", ""
	}
	for _, line := range strings.Split(out.String(), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch strings.ToLower(k) {
		case "user.name":
			name = v
		case "user.email":
			email = v
		}
	}
	return name, email
}

// gitConfigVars are the variables askGit passes on from the server's
// environment: where git finds the user's system and global config, and
// config given in the environment. The rest of it is the client's (API
// keys) or could make git run something.
var gitConfigVars = []string{"HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL",
	"GIT_CONFIG", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"}

// gitConfigEnv is askGit's environment, from the server's: gitConfigVars
// and the GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n that GIT_CONFIG_COUNT
// counts, with a PATH of system directories only and no prompt.
func gitConfigEnv(host []string) []string {
	env := []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0"}
	for _, kv := range host {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(gitConfigVars, k) || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_") {
			env = append(env, kv)
		}
	}
	return env
}

// cappedBuffer keeps at most max bytes and fails the write past that.
type cappedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		return 0, errors.New("output too large")
	}
	return c.buf.Write(p)
}

// readSmall reads a config file the way the server reads anything a
// command may have written (the repository's config is in the workspace):
// without blocking on a FIFO, only a regular file, at most 1 MiB.
func readSmall(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return nil, errors.New("not a plain config file")
	}
	return io.ReadAll(io.LimitReader(f, 1<<20))
}
