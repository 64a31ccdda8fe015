package e2e

import "testing"

// More plantings that must not survive, from a red-team run: redirections
// spelled so that a reader could take them another way, things undone or
// reached again in a later call, and a writer left behind when the call
// ends.
var plantAttacksMore = []plantAttack{
	{name: "a quarantined .git renamed back in a later call", setup: userRepo,
		steps: []string{
			`git init -q sub && git -C sub config core.fsmonitor "$PWN"`,
			`mv sub/.git.quarantined-by-nanosandbox sub/.git && mv sub/.git/HEAD.quarantined-by-nanosandbox sub/.git/HEAD`,
		},
		dirs: []string{"sub"}},
	{name: "a hard link to a config, made before the repository was trusted", setup: userRepo,
		steps: []string{
			`git init -q sub && ln sub/.git/config cfg`,
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" >> cfg`,
		},
		dirs: []string{"sub"}},
	{name: "a gitfile ending in CRLF", setup: userRepo,
		steps: []string{`git init -q --bare g && git -C g config core.bare false && git -C g config core.fsmonitor "$PWN" && mkdir sub && printf 'gitdir: ../g\r\n' > sub/.git`},
		dirs:  []string{"sub"}},
	{name: "a gitfile through /proc/self/cwd", setup: userRepo,
		steps: []string{`git init -q --bare sub/g && git -C sub/g config core.bare false && git -C sub/g config core.fsmonitor "$PWN" && printf 'gitdir: /proc/self/cwd/g\n' > sub/.git`},
		dirs:  []string{"sub"}},
	{name: "a directory made a bare repository in a later call", setup: userRepo,
		steps: []string{
			`mkdir d`,
			`cd d && git init -q --bare . && git config core.bare false && git config core.worktree .. && git config core.fsmonitor "$PWN"`,
		},
		dirs: []string{"d"}},
	{name: "an includeIf hasconfig in a new repository", setup: userRepo,
		steps: []string{`git init -q sub && git -C sub remote add origin /x && printf '[includeIf "hasconfig:remote.*.url:/x"]\n\tpath = ../../inc\n' >> sub/.git/config && printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > inc`},
		dirs:  []string{"sub"}},
	{name: "a process that writes after the call", setup: userRepo,
		steps: []string{
			`(setsid sh -c 'sleep 2; git init -q late && git -C late config core.fsmonitor "$PWN"' </dev/null >/dev/null 2>&1 &)`,
			`sleep 3`,
		},
		dirs: []string{"late"}},
}

func TestEscapeGitPlantedMore(t *testing.T) {
	for _, tt := range plantAttacksMore {
		t.Run(tt.name, func(t *testing.T) { runPlantAttack(t, tt) })
	}
}
