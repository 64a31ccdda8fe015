package policy

// Credentials are paths, relative to a home directory, that hold secrets. They
// are masked in every home directory the sandbox can see (the caller's when a
// grant shows part of it again, /root, and /home/*), unless a grant names the
// path itself or something below it.
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
