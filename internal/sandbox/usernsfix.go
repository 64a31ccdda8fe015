package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// The fixes printed where user namespaces are unavailable (Linux): in the
// error, in --check and, the same text, in the README. They are plain text
// with no build tag, so every OS tests them.

// AppArmorProfile is an AppArmor profile that lets a program create user
// namespaces, as Ubuntu 23.10+ requires when it restricts them
// (kernel.apparmor_restrict_unprivileged_userns=1), with the one command
// that installs and loads it.
type AppArmorProfile struct {
	Name    string `json:"name"`    // the profile's name, and its file's in /etc/apparmor.d
	Attach  string `json:"attach"`  // the executable paths it attaches to (an AppArmor glob)
	Text    string `json:"text"`    // the profile
	Install string `json:"install"` // one shell command that installs and loads it (with sudo)
}

// appArmorName is the profile for the binary's own path; the one for the
// copies npx and uvx cache is appArmorName + "-cached".
const appArmorName = "nanosandbox-mcp"

// cachedAttach is where npx and uvx keep the binary, as an AppArmor glob:
// npx in ~/.npm/_npx/HASH/node_modules/nanosandbox-mcp-linux-CPU/bin (npm
// may nest the platform package deeper), uvx in a virtual environment of
// its cache, ~/.cache/uv/archive-vN/HASH/bin. Both change with each
// version, which a profile for one path would then miss.
const cachedAttach = "@{HOME}/{.npm/_npx/**/nanosandbox-mcp-linux-*/bin,.cache/uv/archive-v*/*/bin}/nanosandbox-mcp"

// AppArmorProfiles returns the AppArmor profiles that let this binary
// create user namespaces where AppArmor restricts them: one for its real
// path, and one for the copies npx and uvx keep in their caches.
func AppArmorProfiles() []AppArmorProfile {
	exe, err := os.Executable()
	if err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
	}
	return appArmorProfiles(exe)
}

// appArmorProfiles returns the profile for the binary at exe (its real
// path) and the one for the copies npx and uvx cache; the first is left
// out when exe is not known.
func appArmorProfiles(exe string) []AppArmorProfile {
	var out []AppArmorProfile
	if exe != "" {
		out = append(out, appArmorProfile(appArmorName, appArmorPath(exe)))
	}
	return append(out, appArmorProfile(appArmorName+"-cached", cachedAttach))
}

// appArmorProfile is a profile named name for the executables attach
// matches: unconfined as before, but for the userns rule (AppArmor 4's ABI,
// Ubuntu 23.10+), which lets them create user namespaces with capabilities
// in them.
func appArmorProfile(name, attach string) AppArmorProfile {
	lines := []string{
		"abi <abi/4.0>,",
		"include <tunables/global>",
		"profile " + name + " " + attach + " flags=(unconfined) {",
		"  userns,",
		"}",
	}
	file := "/etc/apparmor.d/" + name
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = shellQuote(l)
	}
	return AppArmorProfile{
		Name:   name,
		Attach: attach,
		Text:   strings.Join(lines, "\n") + "\n",
		Install: "printf '%s\\n' " + strings.Join(quoted, " ") + " | sudo tee " + file +
			" >/dev/null && sudo apparmor_parser -r " + file,
	}
}

// appArmorPath writes a path as an AppArmor attachment: as it is when it
// holds only plain characters, else quoted, with AppArmor's pattern
// characters escaped so that they match themselves.
func appArmorPath(p string) string {
	plain := true
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+", r)) {
			plain = false
			break
		}
	}
	if plain {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range p {
		if strings.ContainsRune(`\"*?[]{}^@`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// inCache reports whether exe is a copy npx or uvx keeps in its cache,
// whose path changes with each version.
func inCache(exe string) bool {
	return strings.Contains(exe, "/.npm/_npx/") || strings.Contains(exe, "/uv/archive-v")
}

// withoutNamespacesFix is the way forward every case shares: the reduced
// mode, on the flag that asks for it.
const withoutNamespacesFix = "or run commands without namespaces, with fewer protections: --without-namespaces (" +
	appName + " --check --without-namespaces says which it keeps)"

// appName is the binary's name, in the commands the fixes print.
const appName = "nanosandbox-mcp"

// appArmorFix is the fix for Ubuntu's AppArmor restriction: a profile for
// this binary (exe, its real path), or for the copies npx and uvx cache
// (first when exe is one of them), or else the sysctl for every program.
func appArmorFix(exe string) string {
	profiles := appArmorProfiles(exe)
	if len(profiles) == 2 && inCache(exe) {
		profiles[0], profiles[1] = profiles[1], profiles[0]
	}
	var b strings.Builder
	b.WriteString("let this binary create them with an AppArmor profile, installed by one of these commands:")
	for _, p := range profiles {
		if p.Attach == cachedAttach {
			b.WriteString("\n  for the copies npx and uvx keep in their caches, whatever the version:")
		} else {
			b.WriteString("\n  for " + exe + ":")
		}
		b.WriteString("\n    " + p.Install)
	}
	b.WriteString("\nor allow them for every program: " + sysctlFix("kernel.apparmor_restrict_unprivileged_userns", "0"))
	b.WriteString("\n" + withoutNamespacesFix)
	return b.String()
}

// sysctlFix sets a sysctl now and at every boot.
func sysctlFix(name, value string) string {
	return "sudo sysctl -w " + name + "=" + value + " (and at boot: echo " + name + "=" + value +
		" | sudo tee /etc/sysctl.d/60-nanosandbox-mcp.conf)"
}

// containerFix is the fix inside a container (kind: "Docker", "Podman",
// "Kubernetes", or "" when it is not known which), whose seccomp profile
// refuses new user namespaces and whose AppArmor profile refuses mounts.
// The sandbox's own seccomp filter still applies to every command.
func containerFix(kind string) string {
	var b strings.Builder
	b.WriteString("start the container with the security options that allow user namespaces and mounts in them (the sandbox's own seccomp filter still applies to every command):")
	if kind != "Kubernetes" {
		b.WriteString("\n  docker run or podman run: --security-opt seccomp=unconfined --security-opt apparmor=unconfined" +
			"\n  a dev container (devcontainer.json): \"runArgs\": [\"--security-opt\", \"seccomp=unconfined\", \"--security-opt\", \"apparmor=unconfined\"]")
	}
	if kind == "" || kind == "Kubernetes" {
		b.WriteString("\n  a Kubernetes pod: securityContext: {seccompProfile: {type: Unconfined}, appArmorProfile: {type: Unconfined}}")
	}
	b.WriteString("\n  (on an Ubuntu 23.10+ host its AppArmor restriction applies too: " + sysctlFix("kernel.apparmor_restrict_unprivileged_userns", "0") + " on the host)")
	b.WriteString("\n" + withoutNamespacesFix)
	return b.String()
}
