package cli

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitconfig"
)

// gitIdentity reads user.name and user.email as git would for the
// workspace, so commits made inside the sandbox carry the user's identity
// without the rest of ~/.gitconfig (which can hold tokens).
func gitIdentity(dir string) (name, email string) {
	if n, e, ok := readIdentity(dir); ok {
		return n, e
	}
	return askGit(dir)
}

// gitEnvRules are the variables that change which config files git reads or
// where the repository is: with any of them set, git itself is asked.
var gitEnvRules = []string{"GIT_CONFIG", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS",
	"GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"}

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

// askGit runs git config, for the cases readIdentity leaves to git.
func askGit(dir string) (name, email string) {
	git, err := exec.LookPath("git")
	if err != nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "config", "--get-regexp", `^user\.(name|email)$`)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, _ := cmd.Output()
	for _, line := range strings.Split(string(out), "\n") {
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
