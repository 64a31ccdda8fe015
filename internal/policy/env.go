package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// DefaultPath is PATH inside the sandbox when the server has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// buildEnv assembles the curated environment: nothing from the server's own
// environment reaches a command except PATH, LANG, LANGUAGE, LC_* and what
// --env names, because clients put API keys there.
func buildEnv(o Options, p *Policy) ([]string, error) {
	host := map[string]string{}
	for _, kv := range o.HostEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, dup := host[k]; !dup {
				host[k] = v
			}
		}
	}
	env := map[string]string{
		"PATH":    DefaultPath,
		"HOME":    p.SandboxHome(),
		"TMPDIR":  "/tmp",
		"TERM":    "dumb",
		"PWD":     p.Workspace,
		"USER":    o.User,
		"LOGNAME": o.User,
	}
	if o.User == "" {
		delete(env, "USER")
		delete(env, "LOGNAME")
	}
	if v := host["PATH"]; v != "" {
		env["PATH"] = v
	}
	for k, v := range host {
		if k == "LANG" || k == "LANGUAGE" || strings.HasPrefix(k, "LC_") {
			env[k] = v
		}
	}
	if !p.HostNetwork {
		// pip retries a refused download five times, with backoff (8 s in
		// all); once says the same at once. --env may set it otherwise.
		env["PIP_RETRIES"] = "1"
		// Update checks that run beside a command that needs no network
		// (npm run, pip install of a local wheel) would leave a note
		// asking the user for hosts nothing needed.
		env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
		env["npm_config_update_notifier"] = "false"
		env["NO_UPDATE_NOTIFIER"] = "1"
	}
	if o.GitName != "" {
		env["GIT_AUTHOR_NAME"] = o.GitName
		env["GIT_COMMITTER_NAME"] = o.GitName
	}
	if o.GitEmail != "" {
		env["GIT_AUTHOR_EMAIL"] = o.GitEmail
		env["GIT_COMMITTER_EMAIL"] = o.GitEmail
	}
	for _, raw := range o.Env {
		name, value, hasValue := strings.Cut(raw, "=")
		if !validEnvName(name) {
			return nil, &FlagError{Flag: "--env", Value: raw, Err: "not a variable name", Hint: "pass NAME or NAME=VALUE, where NAME is letters, digits and underscores"}
		}
		if strings.HasPrefix(name, "_NANOSANDBOX") {
			return nil, &FlagError{Flag: "--env", Value: name, Err: "reserved for the sandbox itself", Hint: "choose another name"}
		}
		if !p.HostNetwork && isProxyVariable(name) {
			return nil, &FlagError{Flag: "--env", Value: name, Err: "set by the sandbox: commands reach the network only through the server's proxy", Hint: "drop --env " + name + ": --allow-net HOST lets commands reach a host through it; with --host-network instead, --env may name your own proxy"}
		}
		if strings.ContainsRune(value, 0) {
			return nil, &FlagError{Flag: "--env", Value: name, Err: "value contains a NUL byte", Hint: "pass a plain value"}
		}
		if !hasValue {
			v, ok := host[name]
			if !ok {
				return nil, &FlagError{Flag: "--env", Value: name, Err: "not set in the server's environment", Hint: fmt.Sprintf("set it where the server is launched, or pass --env %s=VALUE", name)}
			}
			value = v
		}
		env[name] = value
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// proxyVariables name the proxy a command's HTTP clients use, in the
// spellings curl, pip, npm, git and Go read.
var proxyVariables = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// noProxyVariables name the destinations that skip the proxy.
var noProxyVariables = []string{"NO_PROXY", "no_proxy"}

func isProxyVariable(name string) bool {
	return slices.Contains(proxyVariables, name) || slices.Contains(noProxyVariables, name)
}

// ProxyEnv returns the variables that send a command's HTTP(S) through
// the server's proxy at proxyURL ("http://127.0.0.1:3128"), all but what
// goes to the sandbox's own loopback, where a command's own servers listen.
// The sandbox adds them to Env unless the network is the host's.
func ProxyEnv(proxyURL string) []string {
	var env []string
	for _, v := range proxyVariables {
		env = append(env, v+"="+proxyURL)
	}
	for _, v := range noProxyVariables {
		env = append(env, v+"=localhost,127.0.0.1,::1")
	}
	return env
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
