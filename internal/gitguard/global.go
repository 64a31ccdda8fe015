package gitguard

import "path/filepath"

// GlobalConfigFiles lists the files of git's system and global config, as
// git finds them: getenv is the environment the user's git runs with, git
// the binary (its prefix has the system config of a git built elsewhere
// than /usr). Files that do not exist are listed too: they are watched.
func GlobalConfigFiles(getenv func(string) string, home, git string) []string {
	var out []string
	if getenv("GIT_CONFIG_NOSYSTEM") == "" {
		if s := getenv("GIT_CONFIG_SYSTEM"); s != "" {
			out = append(out, s)
		} else {
			out = append(out, "/etc/gitconfig")
			if git != "" {
				if p := filepath.Join(filepath.Dir(filepath.Dir(git)), "etc", "gitconfig"); p != "/etc/gitconfig" {
					out = append(out, p)
				}
			}
		}
	}
	if g := getenv("GIT_CONFIG_GLOBAL"); g != "" {
		return append(out, g)
	}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".gitconfig"))
	}
	return out
}
