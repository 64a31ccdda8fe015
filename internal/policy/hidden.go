package policy

// Credentials are paths, relative to a home directory, that hold secrets. They
// are masked in every home directory the sandbox can see (the caller's when a
// grant shows part of it again, /root, and /home/*), unless a grant names the
// path itself or something below it.
//
// It is a list: a secret kept anywhere else is not masked, so a home that
// holds others is best not granted (README says so). $XDG_RUNTIME_DIR's
// copies (containers/auth.json) are in /run, which is private anyway.
var Credentials = []string{
	".ssh",
	".gnupg",
	".aws",
	".azure",
	".config/gcloud",
	".kube",
	".docker/config.json",
	".netrc",
	".npmrc",
	".pypirc",
	".git-credentials",
	".config/gh",
	".config/hub",
	".password-store",
	".local/share/keyrings",
	".pki",
	".terraform.d/credentials.tfrc.json",
	".cargo/credentials",
	".cargo/credentials.toml",
	".gem/credentials",
	".m2/settings-security.xml",
	// Beside those above, where the same kind of secret is kept by
	// another tool or at another place of the same one:
	".config/git/credentials",        // git credential-store's XDG file, read before ~/.git-credentials
	".config/containers/auth.json",   // podman's, buildah's and skopeo's registry logins (docker's config.json)
	".m2/settings.xml",               // Maven's servers and their passwords
	".gradle/gradle.properties",      // Gradle's publishing and signing passwords
	".yarnrc.yml",                    // Yarn's npmAuthToken (yarn npm login)
	".bundle/config",                 // Bundler's gem source logins
	".local/share/gem/credentials",   // RubyGems' XDG place for ~/.gem/credentials
	".config/pypoetry/auth.toml",     // Poetry's repository logins, without a keyring
	".rattler/credentials.json",      // pixi's and rattler's logins, without a keyring
	".terraformrc",                   // Terraform's CLI config, which can hold credentials blocks
	".config/helm/repositories.yaml", // Helm's chart repositories and their passwords
	".config/helm/registry",          // Helm's OCI registry logins
	".claude/.credentials.json",      // Claude Code's OAuth token
	".codex/auth.json",               // Codex CLI's API key or token
	".config/glab-cli",               // GitLab CLI's tokens
	".fly",                           // fly.io's token
	".config/doctl",                  // DigitalOcean's token
	".config/hcloud",                 // Hetzner Cloud's tokens
	".oci",                           // Oracle Cloud's API keys
	".databrickscfg",                 // Databricks' tokens
	".s3cfg",                         // s3cmd's access keys
	".boto",                          // gsutil's and boto's keys
	".config/rclone",                 // rclone's remotes and their secrets
	".config/ngrok",                  // ngrok's authtoken
	".ngrok2",                        // ngrok's authtoken, before v3
	".vault-token",                   // HashiCorp Vault's token
	".config/op",                     // 1Password CLI's sessions and account keys
	".op",                            // 1Password CLI's, before v2
	".config/sops",                   // SOPS' age private keys
	".pgpass",                        // PostgreSQL's passwords
	".my.cnf",                        // MySQL's client password
	".bash_history",
	".zsh_history",
	".sh_history",
	".history",
	".python_history",
	".node_repl_history",
	".psql_history",
	".mysql_history",
	".sqlite_history",
	".lesshst",
	".local/share/fish/fish_history",
}

// SystemSecrets are absolute files that are masked wherever they exist.
var SystemSecrets = []string{
	"/etc/shadow",
	"/etc/shadow-",
	"/etc/gshadow",
	"/etc/gshadow-",
	"/etc/security/opasswd",
	"/etc/ssh/ssh_host_rsa_key",
	"/etc/ssh/ssh_host_ecdsa_key",
	"/etc/ssh/ssh_host_ed25519_key",
	"/etc/ssh/ssh_host_dsa_key",
}

// PrivateDirs are host directories replaced by private, empty, writable ones:
// they hold sockets that reach programs outside (the systemd user bus,
// docker, tmux, ssh-agent). /dev/shm is built with the minimal /dev.
var PrivateDirs = []string{"/tmp", "/var/tmp", "/run"}
