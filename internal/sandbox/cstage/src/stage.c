// The exec stage, in C: the last restrictions on the command, then execve.
//
// It does what execMain (exec_linux.go) does, in the same order, driven by
// one flat binary instruction block that the helper precomputed
// (cstage_linux.go encodes it; its layout is struct header below): the root
// check, rlimits, chdir, the program's lookup, capabilities dropped,
// no_new_privs, Landlock, seccomp last, the Ready report, close_range,
// execve. It parses no text and makes no decisions of its own: every value
// it applies was computed by the Go side, which also turns its binary
// reports back into the Go stage's messages (relay, in cstage_linux.go).
//
// Freestanding: no libc, raw system calls (sys.h), one static ELF of a few
// KiB.
// Built by build.sh for x86_64 and aarch64 only; other targets keep the Go
// stage.
//
// Descriptors: 0-2 the command's stdio, 3 the instruction block (read to
// EOF), 4 the reports to the helper (fixed 64-byte records). Exit status:
// 255 when setup failed (after a report, or silently when the block never
// came: the helper ended first), 127 or 126 when the program could not be
// started, 0 after a probe.

#define NSB_PROTOCOL 1

#include "sys.h"

NSB_START(stage_main);

enum {
	AT_EACCESS = 0x200, X_OK = 1,
	PR_CAPBSET_DROP = 24, PR_SET_SECUREBITS = 28, PR_SET_NO_NEW_PRIVS = 38,
	PR_CAP_AMBIENT = 47, PR_CAP_AMBIENT_CLEAR_ALL = 4,
	LINUX_CAPABILITY_VERSION_3 = 0x20080522,
	LANDLOCK_RULE_PATH_BENEATH = 1,
	SECCOMP_SET_MODE_FILTER = 1,
	RLIMIT_NOFILE = 7,
};

// ---- The instruction block (cstage_linux.go writes it) ----
//
// A header of u64 words, then the data it points into by byte offsets. An
// array of n string offsets has n+1 slots, the last one zero; the stage
// turns each offset into a pointer in place (the argv and envp of execve
// among them). The block's last byte is NUL, so every string at an offset
// inside the block ends inside it.

#define BLOCK_MAGIC 0x5342534eu // "NSBS"
#define BLOCK_MAX (64ul << 20)

enum { F_PROBE = 1, F_LANDLOCK = 2, F_SLASH = 4 };
enum { RL_NOFILE_CAP = 1 };

struct header {
	u32 magic, version;
	u64 size;
	u64 flags;
	u64 root_mnt, root_dev, root_ino;
	u64 dir, prog;
	u64 n_cand, cand;
	u64 n_argv, argv;
	u64 n_env, env;
	u64 n_rlim, rlim;
	u64 ll_attr_size, ll_handled_fs, ll_handled_net, ll_scoped, ll_file_mask;
	u64 n_rules, rules;
	u64 seccomp_flags, n_filter, filter;
};
_Static_assert(sizeof(struct header) == 208, "header");

struct rlim {
	u64 resource, flags, cur, max;
};
struct rule {
	u64 access, path, read_only;
};
struct sock_filter {
	u16 code;
	u8 jt, jf;
	u32 k;
};

// ---- Reports (cstage_linux.go reads them) ----

enum { K_READY = 1, K_SETUP = 2, K_START = 3, K_PART = 4 };
enum {
	OP_BLOCK = 1, OP_STATX_ROOT, OP_ROOT_NO_MNT, OP_ROOT_MISMATCH, OP_RLIMIT,
	OP_RLIMITS, OP_CHDIR, OP_AMBIENT_CLEAR, OP_CAPGET, OP_CAPS_LEFT,
	OP_SECUREBITS, OP_CAPBSET_DROP, OP_CAPSET, OP_NO_NEW_PRIVS, OP_LL_CREATE,
	OP_LL_NOT_ABS, OP_LL_OPEN, OP_LL_FSTAT, OP_LL_ADD, OP_LL_RESTRICT,
	OP_SECCOMP, OP_CLOSE_RANGE,
};
// Why a block was refused (OP_BLOCK's index).
enum {
	B_SHORT = 1, B_MAGIC, B_VERSION, B_SIZE, B_READ, B_LONG, B_UNTERMINATED,
	B_RANGE, B_ALLOC,
};
enum { START_LOOKUP = 1, START_EXEC = 2 };

struct report {
	u32 magic, kind, op, index;
	s32 err;
	u32 pad;
	u64 v[5];
};
_Static_assert(sizeof(struct report) == 64, "report");

static void put(u32 kind, u32 op, u32 index, int err, u64 v0, u64 v1, u64 v2, u64 v3)
{
	struct report r = {BLOCK_MAGIC, kind, op, index, err, 0, {v0, v1, v2, v3, 0}};
	// One write of 64 bytes, below PIPE_BUF: whole or not at all.
	sys3(SYS_write, 4, &r, sizeof r);
}


static __attribute__((noreturn)) void fail(u32 op, u32 index, int err, u64 v0, u64 v1, u64 v2, u64 v3)
{
	put(K_SETUP, op, index, err, v0, v1, v2, v3);
	exit_now(255);
}

static __attribute__((noreturn)) void refuse(u32 why) { fail(OP_BLOCK, why, 0, 0, 0, 0, 0); }



static u8 *block;
static u64 block_size;

// at returns a pointer to n bytes at offset off of the block, 8-aligned,
// or refuses the block.
static void *at(u64 off, u64 n)
{
	if (off % 8 != 0 || off > block_size || n > block_size - off)
		refuse(B_RANGE);
	return block + off;
}

// strings turns an array of n string offsets at off into pointers, NULL
// after the last.
static char **strings(u64 n, u64 off)
{
	if (n >= block_size / 8)
		refuse(B_RANGE);
	u64 *slot = at(off, (n + 1) * 8);
	for (u64 i = 0; i < n; i++) {
		if (slot[i] >= block_size)
			refuse(B_RANGE);
		slot[i] = (u64)(block + slot[i]);
	}
	slot[n] = 0;
	return (char **)slot;
}

static char *string(u64 off)
{
	if (off >= block_size)
		refuse(B_RANGE);
	return (char *)block + off;
}

static struct header *read_block(void)
{
	struct header h;
	s64 r = read_full(3, (u8 *)&h, sizeof h);
	if (r == 0)
		exit_now(255); // the helper ended before the call came: nothing to report
	if (r < 0)
		fail(OP_BLOCK, B_READ, errno_of(r), 0, 0, 0, 0);
	if ((u64)r < sizeof h)
		refuse(B_SHORT);
	if (h.magic != BLOCK_MAGIC)
		refuse(B_MAGIC);
	if (h.version != NSB_PROTOCOL)
		refuse(B_VERSION);
	if (h.size < sizeof h || h.size > BLOCK_MAX)
		refuse(B_SIZE);
	s64 m = sys6(SYS_mmap, 0, (s64)h.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (errno_of(m))
		fail(OP_BLOCK, B_ALLOC, errno_of(m), 0, 0, 0, 0);
	block = (u8 *)m;
	block_size = h.size;
	memcpy(block, &h, sizeof h);
	u64 rest = h.size - sizeof h;
	r = read_full(3, block + sizeof h, rest);
	if (r < 0)
		fail(OP_BLOCK, B_READ, errno_of(r), 0, 0, 0, 0);
	if ((u64)r < rest)
		refuse(B_SHORT);
	u8 extra;
	r = read_full(3, &extra, 1);
	if (r != 0)
		refuse(B_LONG);
	sys1(SYS_close, 3);
	if (block[block_size - 1] != 0)
		refuse(B_UNTERMINATED);
	return (struct header *)block;
}


// This process started before the helper built the sandbox's root and
// pivoted into it; the pivots moved its root along. Never run a command
// anywhere else.
static void check_root(struct header *h)
{
	struct statx st;
	s64 r = sys5(SYS_statx, AT_FDCWD, "/", 0, STATX_INO | STATX_MNT_ID, &st);
	if (r < 0)
		fail(OP_STATX_ROOT, 0, errno_of(r), 0, 0, 0, 0);
	if (!(st.mask & STATX_MNT_ID))
		fail(OP_ROOT_NO_MNT, 0, 0, 0, 0, 0, 0);
	u64 dev = mkdev(st.dev_major, st.dev_minor);
	if (st.mnt_id != h->root_mnt || dev != h->root_dev || st.ino != h->root_ino)
		fail(OP_ROOT_MISMATCH, 0, 0, st.mnt_id, dev, st.ino, 0);
}

// Every limit is set even after one fails, as the Go stage does; each
// failure is reported, then the stage fails.
static void set_rlimits(struct header *h)
{
	if (h->n_rlim > block_size / sizeof(struct rlim))
		refuse(B_RANGE);
	struct rlim *l = at(h->rlim, h->n_rlim * sizeof(struct rlim));
	int failed = 0;
	for (u64 i = 0; i < h->n_rlim; i++) {
		u64 lim[2] = {l[i].cur, l[i].max};
		if (l[i].flags & RL_NOFILE_CAP) {
			// The hard limit as it is here, capped.
			u64 old[2];
			if (sys4(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, old) < 0)
				continue; // as the Go stage: not set when it cannot be read
			lim[0] = lim[1] = old[1] < l[i].max ? old[1] : l[i].max;
		}
		s64 r = sys4(SYS_prlimit64, 0, l[i].resource, lim, 0);
		if (r < 0) {
			put(K_PART, OP_RLIMIT, (u32)i, errno_of(r), lim[0], 0, 0, 0);
			failed = 1;
		}
	}
	if (failed)
		fail(OP_RLIMITS, 0, 0, 0, 0, 0, 0);
}

// executable is lookPath's test: it exists, is no directory, and may be
// executed by this process's effective ids.
static int executable(const char *p)
{
	struct statx st;
	s64 r = sys5(SYS_statx, AT_FDCWD, p, 0, STATX_TYPE | STATX_MODE, &st);
	if (r < 0)
		return errno_of(r);
	if ((st.mode & S_IFMT) == S_IFDIR)
		return EISDIR;
	return errno_of(sys4(SYS_faccessat2, AT_FDCWD, p, X_OK, AT_EACCESS));
}

// look_up returns the program's path, or NULL with *err set: the first
// error other than "not there" of a candidate, or 0 when none was there.
// The Go side computed the candidates: the program itself when its name
// has a slash, else its name joined to each PATH entry.
static const char *look_up(struct header *h, char **cand, int *err)
{
	*err = 0;
	if (h->flags & F_SLASH) {
		if (h->n_cand != 1)
			refuse(B_RANGE);
		*err = executable(cand[0]);
		return *err ? 0 : cand[0];
	}
	for (u64 i = 0; i < h->n_cand; i++) {
		int e = executable(cand[i]);
		if (e == 0)
			return cand[i];
		if (*err == 0 && e != ENOENT && e != ENOTDIR)
			*err = e; // found, but not runnable: say so if nothing better turns up
	}
	return 0;
}

struct cap_header {
	u32 version;
	s32 pid;
};
struct cap_data {
	u32 effective, permitted, inheritable;
};

// drop_capabilities is dropCapabilities (exec_linux.go): for a caller
// other than root, a check that none is left and the ambient set cleared;
// for root, securebits locked so root is not special, the bounding and
// ambient sets emptied, then every set cleared.
static void drop_capabilities(void)
{
	struct cap_header hdr = {LINUX_CAPABILITY_VERSION_3, 0};
	struct cap_data d[2] = {{0, 0, 0}, {0, 0, 0}};
	s64 r;
	u64 uid = (u64)sys0(SYS_getuid);
	if (uid != 0) {
		if ((r = sys5(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)) < 0)
			fail(OP_AMBIENT_CLEAR, 0, errno_of(r), 0, 0, 0, 0);
		if ((r = sys2(SYS_capget, &hdr, d)) < 0)
			fail(OP_CAPGET, 0, errno_of(r), 0, 0, 0, 0);
		if ((d[0].effective | d[0].permitted | d[0].inheritable |
		     d[1].effective | d[1].permitted | d[1].inheritable) != 0)
			fail(OP_CAPS_LEFT, 0, 0, uid,
			     (u64)d[0].effective | (u64)d[0].permitted << 32,
			     (u64)d[0].inheritable | (u64)d[1].effective << 32,
			     (u64)d[1].permitted | (u64)d[1].inheritable << 32);
		return;
	}
	// <linux/securebits.h>: NOROOT, NO_SETUID_FIXUP, KEEP_CAPS locked,
	// NO_CAP_AMBIENT_RAISE, each with its lock.
	const u64 bits = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 3 | 1 << 5 | 1 << 6 | 1 << 7;
	if ((r = sys5(SYS_prctl, PR_SET_SECUREBITS, bits, 0, 0, 0)) < 0)
		fail(OP_SECUREBITS, 0, errno_of(r), 0, 0, 0, 0);
	// Every capability number there can be; the kernel answers EINVAL
	// past its last one (cap_last_cap), which the Go stage reads instead.
	for (u32 c = 0; c <= 63; c++) {
		r = sys5(SYS_prctl, PR_CAPBSET_DROP, c, 0, 0, 0);
		if (r < 0 && errno_of(r) != EINVAL)
			fail(OP_CAPBSET_DROP, c, errno_of(r), 0, 0, 0, 0);
	}
	if ((r = sys5(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)) < 0)
		fail(OP_AMBIENT_CLEAR, 0, errno_of(r), 0, 0, 0, 0);
	if ((r = sys2(SYS_capset, &hdr, d)) < 0)
		fail(OP_CAPSET, 0, errno_of(r), 0, 0, 0, 0);
}

struct landlock_ruleset_attr {
	u64 handled_access_fs, handled_access_net, scoped, quiet_access_fs;
};
struct __attribute__((packed)) landlock_path_beneath_attr {
	u64 allowed_access;
	s32 parent_fd;
};

// restrict_landlock is restrictLandlock (landlock_linux.go) with the
// ruleset and the rules the Go side computed for this kernel's ABI: a
// read-only path that is gone, or a symlink now, grants nothing; one that
// is not a directory gets only the rights that apply to a file.
static void restrict_landlock(struct header *h)
{
	struct landlock_ruleset_attr attr = {h->ll_handled_fs, h->ll_handled_net, h->ll_scoped, 0};
	if (h->ll_attr_size > sizeof attr)
		refuse(B_RANGE);
	s64 ruleset = sys3(SYS_landlock_create_ruleset, &attr, h->ll_attr_size, 0);
	if (ruleset < 0)
		fail(OP_LL_CREATE, 0, errno_of(ruleset), 0, 0, 0, 0);
	if (h->n_rules > block_size / sizeof(struct rule))
		refuse(B_RANGE);
	struct rule *rules = at(h->rules, h->n_rules * sizeof(struct rule));
	for (u64 i = 0; i < h->n_rules; i++) {
		const char *path = string(rules[i].path);
		int ro = rules[i].read_only != 0;
		if (path[0] != '/')
			fail(OP_LL_NOT_ABS, (u32)i, 0, 0, 0, 0, 0);
		s64 fd = sys4(SYS_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC | (ro ? O_NOFOLLOW : 0), 0);
		if (ro && errno_of(fd) == ENOENT)
			continue;
		if (fd < 0)
			fail(OP_LL_OPEN, (u32)i, errno_of(fd), 0, 0, 0, 0);
		struct statx st;
		s64 r = sys5(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE, &st);
		if (r < 0)
			fail(OP_LL_FSTAT, (u32)i, errno_of(r), 0, 0, 0, 0);
		if (ro && (st.mode & S_IFMT) == S_IFLNK) {
			sys1(SYS_close, fd);
			continue;
		}
		u64 access = rules[i].access;
		if ((st.mode & S_IFMT) != S_IFDIR)
			access &= h->ll_file_mask;
		struct landlock_path_beneath_attr pb = {access, (s32)fd};
		r = sys4(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
		if (r < 0)
			fail(OP_LL_ADD, (u32)i, errno_of(r), 0, 0, 0, 0);
		sys1(SYS_close, fd);
	}
	// Flags 0: this process has one thread, and is about to execve.
	s64 r = sys2(SYS_landlock_restrict_self, ruleset, 0);
	if (r < 0)
		fail(OP_LL_RESTRICT, 0, errno_of(r), 0, 0, 0, 0);
	sys1(SYS_close, ruleset);
}

struct sock_fprog {
	u16 len;
	struct sock_filter *filter;
};

static void install_seccomp(struct header *h)
{
	if (h->n_filter == 0 || h->n_filter > 4096)
		refuse(B_RANGE);
	struct sock_fprog prog = {(u16)h->n_filter, at(h->filter, h->n_filter * sizeof(struct sock_filter))};
	s64 r = sys3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, h->seccomp_flags, &prog);
	if (r < 0)
		fail(OP_SECCOMP, 0, errno_of(r), 0, 0, 0, 0);
	if (r > 0)
		fail(OP_SECCOMP, 0, 0, (u64)r, 0, 0, 0); // TSYNC: a thread that could not take it
}

__attribute__((noreturn, used)) void stage_main(void)
{
	struct header *h = read_block();
	const char *dir = string(h->dir);
	char **cand = strings(h->n_cand, h->cand);
	char **argv = strings(h->n_argv, h->argv);
	char **envp = strings(h->n_env, h->env);
	if (h->n_argv == 0)
		refuse(B_RANGE);

	check_root(h);
	set_rlimits(h);
	s64 r = sys1(SYS_chdir, dir);
	if (r < 0)
		fail(OP_CHDIR, 0, errno_of(r), 0, 0, 0, 0);
	int lookup_err;
	const char *path = look_up(h, cand, &lookup_err);
	drop_capabilities();
	if ((r = sys5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) < 0)
		fail(OP_NO_NEW_PRIVS, 0, errno_of(r), 0, 0, 0, 0);
	// Without the flag: the server found no Landlock and runs without it
	// only where the mounts hold the filesystem policy.
	if (h->flags & F_LANDLOCK)
		restrict_landlock(h);
	install_seccomp(h); // last, so setup needs no allowances
	put(K_READY, 0, 0, 0, 0, 0, 0, 0);
	if (h->flags & F_PROBE)
		exit_now(0);
	if (!path) {
		put(K_START, 0, START_LOOKUP, lookup_err, 0, 0, 0, 0);
		exit_now(127);
	}
	if ((r = sys3(SYS_close_range, 3, ~0u, CLOSE_RANGE_CLOEXEC)) < 0)
		fail(OP_CLOSE_RANGE, 0, errno_of(r), 0, 0, 0, 0);
	r = sys3(SYS_execve, path, argv, envp);
	int e = errno_of(r);
	put(K_START, 0, START_EXEC, e, 0, 0, 0, 0);
	exit_now(e == ENOENT || e == ENOTDIR ? 127 : 126);
}
