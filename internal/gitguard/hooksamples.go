package gitguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// A hook sample is inert while it keeps its name, but guides tell users
// to enable one by renaming it, and core.fsmonitor can name
// fsmonitor-watchman.sample as it is: a sample passes only as the host's
// git installs it. The samples are asked of that git (git init of a
// scratch directory), once, and only when a hooks directory holding one
// is judged: a call that makes no repository does not pay for it.

// maxSampleBytes caps a sample read from the scratch directory.
const maxSampleBytes = 1 << 20

// samples caches, by git, the samples it installs (nil: it could not be
// asked, and no sample passes).
var samples struct {
	sync.Mutex
	by map[string]map[string][]byte
}

// hookSamples returns the hook samples the git at path installs in a new
// repository, by name, asking it the first time.
func hookSamples(git string, logf func(string, ...any)) map[string][]byte {
	samples.Lock()
	defer samples.Unlock()
	if s, ok := samples.by[git]; ok {
		return s
	}
	s, err := askSamples(git)
	if err != nil {
		logf("git guard: the hook samples git installs: %v; every sample in a repository made in a call counts as a hook", err)
		s = nil
	}
	if samples.by == nil {
		samples.by = map[string]map[string][]byte{}
	}
	samples.by[git] = s
	return s
}

// forgetSamples empties the cache (tests).
func forgetSamples() {
	samples.Lock()
	samples.by = nil
	samples.Unlock()
}

// askSamples runs git init in a scratch directory of the server's, with
// an environment that makes it read no config (so its templates are its
// own, never a directory init.templateDir names), and reads the samples
// it put in hooks/. Tests replace it.
var askSamples = func(git string) (map[string][]byte, error) {
	if git == "" {
		return nil, errors.New("no git on this machine")
	}
	dir, err := os.MkdirTemp("", "nanosandbox-git-samples-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	scratch := filepath.Join(dir, "r")
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "init", "-q", "--bare", scratch)
	cmd.Dir = "/"
	cmd.Env = []string{
		"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES=/",
	}
	cmd.WaitDelay = gitTimeout
	if out, err := cmd.CombinedOutput(); err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return nil, fmt.Errorf("git init: %v %s", err, msg)
	}
	hooks := filepath.Join(scratch, "hooks")
	ents, _, err := listDir(hooks, maxHooks)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, en := range ents {
		if !strings.HasSuffix(en.name, ".sample") {
			continue
		}
		b, _, err := readRegular(filepath.Join(hooks, en.name), maxSampleBytes)
		if err != nil {
			return nil, err
		}
		out[en.name] = b
	}
	return out, nil
}

// samples is hookSamples for g's git.
func (g *Guard) samples() map[string][]byte { return hookSamples(g.cfg.Git, g.logf) }
