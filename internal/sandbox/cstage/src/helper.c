// The sandbox's helper, in C: pid 1 of the sandbox's namespaces, uid 0 in
// its own user namespace. The server and the command line run it wherever
// both blobs were built, as in every release; a plain go build runs the Go
// helper instead (HELPER-PLAN.md). The server starts it in no namespace,
// and it launches itself into the sandbox's (launch, below).
//
// It does what helperMain (helper_linux.go) does, driven by flat binary
// instruction blocks the Go side precomputed (chelper_linux.go encodes
// them; their layout is struct header below): it builds the mount tree by
// running the blocks' ops in order (mount, mkdir, pivot_root, binds through
// open_tree and move_mount, tmpfs through fsopen and fsmount, ...), brings
// up loopback, hands the proxy's listening socket to the server, then
// starts the exec stage (stage.c) from its memfd in a nested user namespace
// that maps the caller back, hands it its own block (embedded in this one),
// reaps as pid 1, ends the call on its timeout, passes signals on, and
// reports how the command ended. It parses no text and makes no decisions
// of its own: every path, flag and value comes from the block.
//
// Freestanding: no libc, raw system calls (sys.h), one thread.
//
// Descriptors: 0-2 the command's stdio, 3 the blocks (a start block, then
// the call's, read to EOF; or the call's alone), 4 the reports to the
// server (fixed 64-byte records, the stage's too), and the header's
// stage_fd (the exec stage's memfd) and net_fd (the socket on
// which the proxy's listening socket goes to the server). Exit status: 0
// after its exit report, 255 after a setup report (or silently when the
// block never came: the server ended first).

#define NSB_HELPER_PROTOCOL 4

#include "sys.h"

NSB_START(helper_main);

// ---- The instruction block (chelper_linux.go writes it) ----
//
// A header of u64 words, then the data it points into by byte offsets,
// each 8-aligned; strings end inside the block, whose last byte is NUL.

#define BLOCK_MAGIC 0x4842534eu // "NSBH" (the stage's are "NSBS")
#define BLOCK_MAX (64ul << 20)
#define MAX_SLOTS 4096

// A start block (HF_START) comes first, as the helper starts, with what
// needs no call: its ops (the scratch root), then the stage is started,
// which waits for its block; then the call's block comes. Without a start
// block, the first block is the call's, and the stage starts once the
// root is built.
//
// HF_HOLD, with HF_START and a launch into a new user namespace alone:
// this process runs no call. Launched, it reports K_HELD with its pid and
// waits for the block pipe to close, while the server opens that user
// namespace (a root caller's idmapping, rootcaller_linux.go).
enum { HF_START = 1, HF_HOLD = 2 };

struct header {
	u32 magic, version;
	u64 size;
	u64 flags;
	u64 uid, gid;     // the caller's, mapped back in the stage's namespace
	u64 timeout_ns;   // 0: none
	u64 n_ops, ops;   // struct op[n_ops]
	u64 stage_size, stage; // the stage's block; its root words are set here
	u64 n_tmp, tmp;   // string offsets: the tmpfs checked for a full one at the end
	u64 stage_fd;     // the stage's memfd
	u64 net_fd;       // where the proxy's socket goes; ~0 when none
	u64 tasks_limit;  // the process limit, when the helper counts tasks; else 0
	u64 op_base;      // added to an op's index in its reports
	// The first block only: when clone_flags is set, this process was
	// started in none of the sandbox's namespaces and launches the helper
	// into them (launch): uid_map and gid_map (string offsets) are
	// written for it as they are, launch's L_* flags say the rest.
	u64 clone_flags;
	u64 uid_map, gid_map;
	u64 launch;
};
_Static_assert(sizeof(struct header) == 160, "header");

enum {
	L_SETGROUPS = 1,   // setgroups stays allowed in the helper's namespace (else "deny")
	L_BECOME_ROOT = 2, // the helper drops its groups and becomes its namespace's 0 (a root caller's)
};

// An op: code, flags, a slot (a kept mount's descriptor) and up to five
// arguments, string offsets or numbers as the code says.
struct op {
	u64 code, flags, slot, a, b, c, d, e;
};
_Static_assert(sizeof(struct op) == 64, "op");

enum {
	OP_MOUNT = 1,   // mount(a source, b target, c fstype, d flags, e data; "" data: NULL)
	OP_MKDIR,       // mkdir(a, d mode)
	OP_CREATE,      // an empty file a, mode d (O_CREAT|O_EXCL)
	OP_SYMLINK,     // symlink(a target, b link)
	OP_PIVOT,       // pivot_root(a new root, b put old)
	OP_CHDIR,       // chdir(a)
	OP_UMOUNT,      // umount2(a, d flags)
	OP_BIND,        // a copy of the tree at a, attributes d set, private, moved onto b
	OP_TMPFS,       // a tmpfs, root mode a, size b ("": the kernel's), attributes d, moved onto c; kept in slot if nonzero
	OP_SEAL,        // mount_setattr(slot, attributes d), then the slot is closed
	OP_WRITE,       // the string b written to the existing file a
	OP_LOOPBACK,    // lo up
	OP_LISTEN,      // a TCP socket on 127.0.0.1:d, listening (backlog e), sent to the server on net_fd
	OP_ATTACH_FD,   // the inherited mount d moved onto b, then closed
	OP_BIND_LINK,   // the symlink b bound onto itself, attributes d
};
enum {
	F_RECURSIVE = 1,    // OP_BIND: the whole tree (AT_RECURSIVE)
	F_MISSING_OK = 2,   // a path that is gone (ENOENT) skips the op
	F_ANY_ERROR_OK = 4, // any failure skips the op (the copied /proc and /dev, perhaps no mounts)
	// OP_BIND and OP_TMPFS: the mount point is made, before anything is
	// opened, with what is in the way moved aside (makeMountPoint in
	// mount_linux.go), below the root named by e, which the target starts
	// with; a directory with F_DIR, else an empty file.
	F_MAKE = 8,
	F_DIR = 16,
};

// ---- Reports ----

// K_MOVED: what make_point moved out of the way of a mount point: v[0] the
// number of path components to it, v[1] its N, v[2] its type (S_IFMT bits,
// 0 unknown), v[3] whether a directory belongs there.
// K_HELD: a held user namespace's process is ready (HF_HOLD): v[0] its pid.
enum { K_SETUP = 2, K_TOOK = 5, K_EXIT = 6, K_MOVED = 7, K_HELD = 8 };
// The step of an op that failed (a setup report's v[0]).
enum {
	S_CALL = 1, S_OPEN_SRC, S_OPEN_TREE, S_SETATTR, S_OPEN_TARGET, S_MOVE_MOUNT,
	S_FSOPEN, S_FSCONFIG_MODE, S_FSCONFIG_SIZE, S_FSCONFIG_CREATE, S_FSMOUNT,
	S_SOCKET, S_BIND, S_LISTEN, S_SENDMSG, S_IOCTL_GET, S_IOCTL_SET, S_FSTAT,
	S_SLOT, S_MAKE_OPEN, S_MAKE_REMOVE, S_MAKE_MKDIR, S_MAKE_CREATE, S_MAKE_REOPEN,
};
// A setup failure outside the ops (its op field; index 0).
enum {
	H_BLOCK = 100, H_DUMPABLE, H_SIGMASK, H_CLOSE_RANGE, H_PIPE, H_CLONE,
	H_SETGROUPS, H_UID_MAP, H_GID_MAP, H_SYNC, H_STATX_ROOT, H_STAGE_WRITE,
	H_WAIT, H_EXECVEAT, H_CLOCK, H_PROC, H_STAGE_ENDED, H_LAUNCH,
	H_LAUNCH_SETGROUPS, H_LAUNCH_UID_MAP, H_LAUNCH_GID_MAP,
};
// The step of launch that failed (H_LAUNCH's index).
enum {
	LS_PIPE = 0, LS_CLONE, LS_PDEATHSIG, LS_SYNC, LS_DROP_GROUPS, LS_SETRESGID,
	LS_SETRESUID, LS_SETSID,
};
// Why a block was refused (H_BLOCK's index), as stage.c's.
enum {
	B_SHORT = 1, B_MAGIC, B_VERSION, B_SIZE, B_READ, B_LONG, B_UNTERMINATED,
	B_RANGE, B_ALLOC, B_OP,
};
enum { EXIT_TIMED_OUT = 1 };

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

static u64 op_base; // the block's, for the ops' reports

static __attribute__((noreturn)) void fail(u32 op, u32 index, int err, u64 step)
{
	if (op < 100)
		index += (u32)op_base;
	put(K_SETUP, op, index, err, step, 0, 0, 0);
	exit_now(255);
}

static __attribute__((noreturn)) void refuse(u32 why) { fail(H_BLOCK, why, 0, 0); }

// fail_at is fail with the number of path components walked (make_point).
static __attribute__((noreturn)) void fail_at(u32 op, u32 index, int err, u64 step, u64 part)
{
	put(K_SETUP, op, index + (u32)op_base, err, step, part, 0, 0);
	exit_now(255);
}

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

static char *string(u64 off)
{
	if (off >= block_size)
		refuse(B_RANGE);
	return (char *)block + off;
}

// read_block reads one block; the last one, the call's, is followed by EOF.
static struct header *read_block(void)
{
	struct header h;
	s64 r = read_full(3, (u8 *)&h, sizeof h);
	if (r == 0)
		exit_now(255); // the server ended before the call came: nothing to report
	if (r < 0)
		fail(H_BLOCK, B_READ, errno_of(r), 0);
	if ((u64)r < sizeof h)
		refuse(B_SHORT);
	if (h.magic != BLOCK_MAGIC)
		refuse(B_MAGIC);
	if (h.version != NSB_HELPER_PROTOCOL)
		refuse(B_VERSION);
	if (h.size < sizeof h || h.size > BLOCK_MAX)
		refuse(B_SIZE);
	s64 m = sys6(SYS_mmap, 0, (s64)h.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (errno_of(m))
		fail(H_BLOCK, B_ALLOC, errno_of(m), 0);
	block = (u8 *)m;
	block_size = h.size;
	memcpy(block, &h, sizeof h);
	u64 rest = h.size - sizeof h;
	r = read_full(3, block + sizeof h, rest);
	if (r < 0)
		fail(H_BLOCK, B_READ, errno_of(r), 0);
	if ((u64)r < rest)
		refuse(B_SHORT);
	if (!(h.flags & HF_START)) {
		u8 extra;
		r = read_full(3, &extra, 1);
		if (r != 0)
			refuse(B_LONG);
		sys1(SYS_close, 3);
	}
	if (block[block_size - 1] != 0)
		refuse(B_UNTERMINATED);
	op_base = ((struct header *)block)->op_base;
	return (struct header *)block;
}

// ---- The ops ----

struct open_how {
	u64 flags, mode, resolve;
};
struct mount_attr {
	u64 attr_set, attr_clr, propagation, userns_fd;
};
enum {
	RESOLVE_NO_MAGICLINKS = 2, RESOLVE_NO_SYMLINKS = 4,
	OPEN_TREE_CLONE = 1, MOVE_MOUNT_F_EMPTY_PATH = 4, MOVE_MOUNT_T_EMPTY_PATH = 0x40,
	FSOPEN_CLOEXEC = 1, FSMOUNT_CLOEXEC = 1, FSCONFIG_SET_STRING = 1, FSCONFIG_CMD_CREATE = 6,
	MS_PRIVATE = 1 << 18,
};

static int slots[MAX_SLOTS];

// open_nofollow opens path as O_PATH without following any symlink on the
// way (openNoFollow in mount_linux.go).
static s64 open_nofollow(const char *path, u64 extra)
{
	struct open_how how = {O_PATH | O_CLOEXEC | extra, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	return sys4(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
}

// op_error is how a failed step ends: skipped (0) for a path that is gone
// where the op allows it, else a setup report.
static int op_error(u64 i, struct op *o, u64 step, s64 r)
{
	if (errno_of(r) == ENOENT && (o->flags & F_MISSING_OK))
		return 0;
	if (o->flags & F_ANY_ERROR_OK)
		return 0;
	fail((u32)o->code, (u32)i, errno_of(r), step);
}

enum { RESOLVE_BENEATH = 8 };

// MOVED_SUFFIX and MAX_MOVED name what is moved aside: NAME becomes
// NAME.nanosandbox-moved-N, for the first N from 1 to MAX_MOVED that is
// free (movedSuffix and maxMoved in mount_linux.go).
#define MOVED_SUFFIX ".nanosandbox-moved-"
#define MAX_MOVED 1000
#define MOVED_GUESSES 64

struct timespec;
static u64 moved_guess(u64 try);

// move_aside renames name in the directory dir to the first free
// name MOVED_SUFFIX N, and returns N, or -errno (moveAside in
// mount_linux.go). The rename never replaces anything; where the
// filesystem cannot promise that (RENAME_NOREPLACE: EINVAL, as on NFS), a
// name that does not exist is renamed onto.
static s64 move_aside(s64 dir, const char *name)
{
	char to[256 + 32];
	u64 len = 0;
	while (name[len]) {
		to[len] = name[len];
		len++;
	}
	const char suffix[] = MOVED_SUFFIX;
	memcpy(to + len, suffix, sizeof suffix - 1);
	u64 base = len + sizeof suffix - 1;
	for (u64 try = 1; try <= MAX_MOVED + MOVED_GUESSES; try++) {
		// Every fixed name taken (a command made them): names it cannot
		// have guessed, from the clock (movedGuess in mount_linux.go).
		u64 n = try <= MAX_MOVED ? try : moved_guess(try - MAX_MOVED);
		char digits[20];
		u64 k = 0;
		for (u64 v = n; v; v /= 10)
			digits[k++] = (char)('0' + v % 10);
		for (u64 d = 0; d < k; d++)
			to[base + d] = digits[k - 1 - d];
		to[base + k] = 0;
		s64 r = sys5(SYS_renameat2, dir, name, dir, to, RENAME_NOREPLACE);
		if (errno_of(r) == EINVAL) {
			struct statx st;
			s64 s = sys5(SYS_statx, dir, to, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &st);
			r = errno_of(s) == ENOENT ? sys5(SYS_renameat2, dir, name, dir, to, 0) : -EEXIST;
		}
		if (errno_of(r) != EEXIST)
			return r < 0 ? r : (s64)n;
	}
	return -EEXIST;
}

// make_point makes sure the mount point target, below root, is a
// directory (F_DIR) or else a regular file, and every component above it a
// directory, creating what is missing (makeMountPoint in mount_linux.go).
// It is only asked to in trees the sandbox owns (its tmpfs, the private
// home), which commands write: whatever is in the way there, of any type,
// an earlier command left, and it is moved aside (move_aside), never
// removed and never followed, and reported.
static void make_point(u64 i, struct op *o, const char *target)
{
	u32 c = (u32)o->code, n = (u32)i;
	const char *root = string(o->e);
	u64 rl = 0;
	while (root[rl])
		rl++;
	for (u64 k = 0; k < rl; k++)
		if (target[k] != root[k])
			refuse(B_OP);
	if (target[rl] != '/')
		refuse(B_OP);
	const char *rel = target + rl + 1;
	s64 cur = sys4(SYS_openat, AT_FDCWD, root, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (cur < 0)
		fail_at(c, n, errno_of(cur), S_MAKE_REOPEN, 0);
	struct open_how how = {O_PATH | O_CLOEXEC | O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
	char name[256];
	for (u64 part = 1; *rel; part++) {
		u64 len = 0;
		while (rel[len] && rel[len] != '/')
			len++;
		if (len == 0 || len >= sizeof name)
			refuse(B_OP);
		memcpy(name, rel, len);
		name[len] = 0;
		rel += len + (rel[len] == '/');
		int want_dir = *rel != 0 || (o->flags & F_DIR);
		u32 want = want_dir ? S_IFDIR : S_IFREG;
		s64 next = sys4(SYS_openat2, cur, name, &how, sizeof how);
		u32 type = 0;
		int in_way = 0;
		if (next >= 0) {
			struct statx st;
			if (sys5(SYS_statx, next, "", AT_EMPTY_PATH, STATX_TYPE, &st) == 0)
				type = st.mode & S_IFMT;
			if (type == want) {
				sys1(SYS_close, cur);
				cur = next;
				continue;
			}
			sys1(SYS_close, next);
			in_way = 1;
		} else if (errno_of(next) == ELOOP) {
			type = S_IFLNK;
			in_way = 1;
		} else if (errno_of(next) != ENOENT) {
			fail_at(c, n, errno_of(next), S_MAKE_OPEN, part);
		}
		if (in_way) {
			s64 m = move_aside(cur, name);
			if (m < 0)
				fail_at(c, n, errno_of(m), S_MAKE_REMOVE, part);
			put(K_MOVED, c, n + (u32)op_base, 0, part, (u64)m, type, (u64)want_dir);
		}
		if (want_dir) {
			s64 r = sys3(SYS_mkdirat, cur, name, 0755);
			if (r < 0 && errno_of(r) != EEXIST)
				fail_at(c, n, errno_of(r), S_MAKE_MKDIR, part);
		} else {
			s64 f = sys4(SYS_openat, cur, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
			if (f < 0)
				fail_at(c, n, errno_of(f), S_MAKE_CREATE, part);
			sys1(SYS_close, f);
		}
		next = sys4(SYS_openat2, cur, name, &how, sizeof how);
		if (next < 0)
			fail_at(c, n, errno_of(next), S_MAKE_REOPEN, part);
		sys1(SYS_close, cur);
		cur = next;
	}
	sys1(SYS_close, cur);
}

// move_onto moves the detached tree onto target (attach in mount_linux.go).
static int move_onto(u64 i, struct op *o, s64 tree, const char *target)
{
	s64 t = open_nofollow(target, 0);
	if (t < 0)
		return op_error(i, o, S_OPEN_TARGET, t);
	s64 r = sys5(SYS_move_mount, tree, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	sys1(SYS_close, t);
	if (r < 0)
		return op_error(i, o, S_MOVE_MOUNT, r);
	return 1;
}

static void op_bind(u64 i, struct op *o)
{
	// The mount point first: a pin's source is its own mount point.
	if (o->flags & F_MAKE)
		make_point(i, o, string(o->b));
	int rec = (o->flags & F_RECURSIVE) != 0;
	s64 src = open_nofollow(string(o->a), 0);
	if (src < 0) {
		op_error(i, o, S_OPEN_SRC, src);
		return;
	}
	s64 tree = sys3(SYS_open_tree, src, "", OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH | (rec ? AT_RECURSIVE : 0));
	sys1(SYS_close, src);
	if (tree < 0)
		fail((u32)o->code, (u32)i, errno_of(tree), S_OPEN_TREE);
	struct mount_attr attr = {o->d, 0, MS_PRIVATE, 0};
	s64 r = sys5(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | (rec ? AT_RECURSIVE : 0), &attr, sizeof attr);
	if (r < 0)
		fail((u32)o->code, (u32)i, errno_of(r), S_SETATTR);
	move_onto(i, o, tree, string(o->b));
	sys1(SYS_close, tree);
}

static void op_bind_link(u64 i, struct op *o)
{
	s64 fd = open_nofollow(string(o->b), O_NOFOLLOW);
	if (fd < 0) {
		op_error(i, o, S_OPEN_TARGET, fd);
		return;
	}
	struct statx st;
	s64 r = sys5(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE, &st);
	if (r < 0)
		fail((u32)o->code, (u32)i, errno_of(r), S_FSTAT);
	if ((st.mode & S_IFMT) != S_IFLNK) {
		// No longer the symlink planned: as gone (protect in mount_linux.go).
		sys1(SYS_close, fd);
		op_error(i, o, S_FSTAT, -ENOENT);
		return;
	}
	s64 tree = sys3(SYS_open_tree, fd, "", OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH);
	if (tree < 0)
		fail((u32)o->code, (u32)i, errno_of(tree), S_OPEN_TREE);
	struct mount_attr attr = {o->d, 0, MS_PRIVATE, 0};
	if ((r = sys5(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr)) < 0)
		fail((u32)o->code, (u32)i, errno_of(r), S_SETATTR);
	r = sys5(SYS_move_mount, tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	if (r < 0)
		fail((u32)o->code, (u32)i, errno_of(r), S_MOVE_MOUNT);
	sys1(SYS_close, tree);
	sys1(SYS_close, fd);
}

static void op_tmpfs(u64 i, struct op *o)
{
	u32 c = (u32)o->code, n = (u32)i;
	if (o->slot >= MAX_SLOTS)
		refuse(B_OP);
	if (o->flags & F_MAKE)
		make_point(i, o, string(o->c));
	s64 fs = sys2(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		fail(c, n, errno_of(fs), S_FSOPEN);
	s64 r = sys5(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", string(o->a), 0);
	if (r < 0)
		fail(c, n, errno_of(r), S_FSCONFIG_MODE);
	const char *size = string(o->b);
	if (size[0] && (r = sys5(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size, 0)) < 0)
		fail(c, n, errno_of(r), S_FSCONFIG_SIZE);
	if ((r = sys5(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, 0, 0, 0)) < 0)
		fail(c, n, errno_of(r), S_FSCONFIG_CREATE);
	s64 mnt = sys3(SYS_fsmount, fs, FSMOUNT_CLOEXEC, o->d);
	sys1(SYS_close, fs);
	if (mnt < 0)
		fail(c, n, errno_of(mnt), S_FSMOUNT);
	if (move_onto(i, o, mnt, string(o->c)) && o->slot != 0) {
		slots[o->slot] = (int)mnt;
		return;
	}
	sys1(SYS_close, mnt);
}

static void op_seal(u64 i, struct op *o)
{
	if (o->slot == 0 || o->slot >= MAX_SLOTS)
		refuse(B_OP);
	int fd = slots[o->slot];
	if (fd <= 0)
		fail((u32)o->code, (u32)i, 0, S_SLOT);
	struct mount_attr attr = {o->d, 0, 0, 0};
	s64 r = sys5(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof attr);
	if (r < 0)
		fail((u32)o->code, (u32)i, errno_of(r), S_SETATTR);
	sys1(SYS_close, fd);
	slots[o->slot] = 0;
}

struct ifreq {
	char name[16];
	u16 flags;
	u8 pad[22];
};
enum { AF_INET = 2, SOCK_STREAM = 1, SOCK_DGRAM = 2, SIOCGIFFLAGS = 0x8913, SIOCSIFFLAGS = 0x8914, IFF_UP = 1 };

static void op_loopback(u64 i, struct op *o)
{
	u32 c = (u32)o->code, n = (u32)i;
	s64 s = sys3(SYS_socket, AF_INET, SOCK_DGRAM | O_CLOEXEC, 0);
	if (s < 0)
		fail(c, n, errno_of(s), S_SOCKET);
	struct ifreq ifr = {{'l', 'o', 0}, 0, {0}};
	s64 r = sys3(SYS_ioctl, s, SIOCGIFFLAGS, &ifr);
	if (r < 0)
		fail(c, n, errno_of(r), S_IOCTL_GET);
	ifr.flags |= IFF_UP;
	if ((r = sys3(SYS_ioctl, s, SIOCSIFFLAGS, &ifr)) < 0)
		fail(c, n, errno_of(r), S_IOCTL_SET);
	sys1(SYS_close, s);
}

struct sockaddr_in {
	u16 family, port;
	u8 addr[4];
	u8 zero[8];
};
struct iovec {
	void *base;
	u64 len;
};
struct msghdr {
	void *name;
	u32 namelen;
	struct iovec *iov;
	u64 iovlen;
	void *control;
	u64 controllen;
	s32 flags;
};
struct cmsg_fd {
	u64 len;
	s32 level, type;
	s32 fd;
	u32 pad;
};
enum { SOL_SOCKET = 1, SCM_RIGHTS = 1 };

// op_listen makes the proxy's listening socket and hands it to the server
// (listenProxy in network_linux.go); neither stays open here.
static void op_listen(struct header *h, u64 i, struct op *o)
{
	u32 c = (u32)o->code, n = (u32)i;
	s64 s = sys3(SYS_socket, AF_INET, SOCK_STREAM | O_CLOEXEC, 0);
	if (s < 0)
		fail(c, n, errno_of(s), S_SOCKET);
	u16 port = (u16)o->d;
	struct sockaddr_in sa = {AF_INET, (u16)(port >> 8 | port << 8), {127, 0, 0, 1}, {0}};
	s64 r = sys3(SYS_bind, s, &sa, sizeof sa);
	if (r < 0)
		fail(c, n, errno_of(r), S_BIND);
	if ((r = sys2(SYS_listen, s, o->e)) < 0)
		fail(c, n, errno_of(r), S_LISTEN);
	u8 byte = 0;
	struct iovec iov = {&byte, 1};
	struct cmsg_fd cm = {16 + 4, SOL_SOCKET, SCM_RIGHTS, (s32)s, 0};
	struct msghdr msg = {0, 0, &iov, 1, &cm, sizeof cm, 0};
	r = sys3(SYS_sendmsg, h->net_fd, &msg, 0);
	sys1(SYS_close, h->net_fd);
	sys1(SYS_close, s);
	if (r < 0)
		fail(c, n, errno_of(r), S_SENDMSG);
}

static void run_op(struct header *h, u64 i, struct op *o)
{
	s64 r = 0;
	switch (o->code) {
	case OP_MOUNT: {
		const char *data = string(o->e);
		r = sys5(SYS_mount, string(o->a), string(o->b), string(o->c), o->d, data[0] ? data : 0);
		break;
	}
	case OP_MKDIR:
		r = sys3(SYS_mkdirat, AT_FDCWD, string(o->a), o->d);
		break;
	case OP_CREATE:
		r = sys4(SYS_openat, AT_FDCWD, string(o->a), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, o->d);
		if (r >= 0)
			r = sys1(SYS_close, r);
		break;
	case OP_SYMLINK:
		r = sys3(SYS_symlinkat, string(o->a), AT_FDCWD, string(o->b));
		break;
	case OP_PIVOT:
		r = sys2(SYS_pivot_root, string(o->a), string(o->b));
		break;
	case OP_CHDIR:
		r = sys1(SYS_chdir, string(o->a));
		break;
	case OP_UMOUNT:
		r = sys2(SYS_umount2, string(o->a), o->d);
		break;
	case OP_BIND:
		op_bind(i, o);
		return;
	case OP_BIND_LINK:
		op_bind_link(i, o);
		return;
	case OP_TMPFS:
		op_tmpfs(i, o);
		return;
	case OP_SEAL:
		op_seal(i, o);
		return;
	case OP_WRITE: {
		const char *data = string(o->b);
		u64 len = 0;
		while (data[len])
			len++;
		s64 fd = sys4(SYS_openat, AT_FDCWD, string(o->a), O_WRONLY | O_TRUNC | O_CLOEXEC, 0);
		if (fd < 0) {
			r = fd;
			break;
		}
		r = write_full((int)fd, (const u8 *)data, len);
		sys1(SYS_close, fd);
		break;
	}
	case OP_LOOPBACK:
		op_loopback(i, o);
		return;
	case OP_LISTEN:
		op_listen(h, i, o);
		return;
	case OP_ATTACH_FD:
		move_onto(i, o, (s64)o->d, string(o->b));
		sys1(SYS_close, o->d);
		return;
	default:
		refuse(B_OP);
	}
	if (r < 0)
		op_error(i, o, S_CALL, r);
}

// ---- The exec stage ----

enum {
	CLONE_NEWUSER = 0x10000000, SIGHUP = 1, SIGINT = 2, SIGQUIT = 3, SIGKILL = 9,
	SIGPIPE = 13, SIGTERM = 15, SIGCHLD = 17, SIG_SETMASK = 2, SIG_BLOCK = 0, WNOHANG = 1,
	PR_SET_DUMPABLE = 4, CLOCK_MONOTONIC = 1, PR_SET_PDEATHSIG = 1, PR_SET_NAME = 15,
};
#define SIGBIT(s) (1ul << ((s) - 1))

// put_dec writes v in decimal at p, and returns the end.
static char *put_dec(char *p, u64 v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

// write_proc writes text to /proc/PID/name.
static s64 write_proc(s64 pid, const char *name, const char *text, u64 len)
{
	char path[64];
	char *p = path;
	for (const char *s = "/proc/"; *s;)
		*p++ = *s++;
	p = put_dec(p, (u64)pid);
	*p++ = '/';
	while (*name)
		*p++ = *name++;
	*p = 0;
	s64 fd = sys4(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	s64 r = write_full((int)fd, (const u8 *)text, len);
	sys1(SYS_close, fd);
	return r;
}

// id_map is "ID 0 1\n": the caller's id in the stage's namespace is the
// helper's 0 (nestedUserNS in cstage_linux.go).
static u64 id_map(char *buf, u64 id)
{
	char *p = put_dec(buf, id);
	for (const char *s = " 0 1\n"; *s;)
		*p++ = *s++;
	return (u64)(p - buf);
}

// move_to puts fd at want, without close-on-exec.
static void move_to(s64 fd, int want)
{
	if (fd == want)
		sys3(SYS_fcntl, fd, F_SETFD, 0);
	else
		sys3(SYS_dup3, fd, want, 0);
}

// spawn_stage starts the exec stage in a nested user namespace that maps
// the caller back (uid, gid), from the memfd stage_fd; it waits for its
// block on the pipe whose write end goes to *blk_w. It returns its pid.
static s64 spawn_stage(u64 uid, u64 gid, u64 stage_fd, int *blk_w)
{
	int blk[2], sync[2];
	s64 r;
	if ((r = sys2(SYS_pipe2, blk, O_CLOEXEC)) < 0 || (r = sys2(SYS_pipe2, sync, O_CLOEXEC)) < 0)
		fail(H_PIPE, 0, errno_of(r), 0);
	// Dumpable across the clone, as in launch: a helper its launcher
	// cloned has the memory of a process of the host's namespace, whose
	// /proc files are the host's root's when it is not dumpable, and the
	// stage's maps could not be written. No command runs yet; this
	// process is not dumpable again before its call.
	if ((r = sys5(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0)) < 0)
		fail(H_DUMPABLE, 0, errno_of(r), 0);
	// Fork semantics (no new stack): this process has one thread.
	s64 pid = sys5(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (pid < 0)
		fail(H_CLONE, 0, errno_of(pid), 0);
	if (pid == 0) {
		// The stage: wait for its maps, then become it, with no signal
		// blocked (the mask survives execve), and nothing inherited but
		// stdio, its block and the reports (its memfd is executed
		// through its descriptor, close-on-exec).
		u64 none = 0;
		sys4(SYS_rt_sigprocmask, SIG_SETMASK, &none, 0, 8);
		sys1(SYS_close, sync[1]);
		u8 b;
		if (read_full(sync[0], &b, 1) != 1)
			exit_now(255); // the helper failed, and said why
		move_to(blk[0], 3);
		sys3(SYS_close_range, 5, ~0u, CLOSE_RANGE_CLOEXEC);
		static char *const argv[] = {"nanosandbox-mcp: exec", 0};
		static char *const envp[] = {0};
		r = sys5(SYS_execveat, stage_fd, "", argv, envp, AT_EMPTY_PATH);
		fail(H_EXECVEAT, 0, errno_of(r), 0);
	}
	sys1(SYS_close, blk[0]);
	sys1(SYS_close, sync[0]);
	char buf[32];
	if ((r = write_proc(pid, "setgroups", "deny", 4)) < 0)
		fail(H_SETGROUPS, 0, errno_of(r), 0);
	if ((r = write_proc(pid, "uid_map", buf, id_map(buf, uid))) < 0)
		fail(H_UID_MAP, 0, errno_of(r), 0);
	if ((r = write_proc(pid, "gid_map", buf, id_map(buf, gid))) < 0)
		fail(H_GID_MAP, 0, errno_of(r), 0);
	u8 go = 1;
	if ((r = write_full(sync[1], &go, 1)) < 0)
		fail(H_SYNC, 0, errno_of(r), 0);
	sys1(SYS_close, sync[1]);
	if ((r = sys5(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0)) < 0)
		fail(H_DUMPABLE, 0, errno_of(r), 0);
	*blk_w = blk[1];
	return pid;
}

// hand_stage gives the stage its block, with the root it must find itself
// in: this one, now built (pivot_root moved a stage started earlier along).
static void hand_stage(struct header *h, int blk_w)
{
	// The root words are written into the block after it was checked:
	// they are words 3-5 of the stage's block, inside it (48 bytes at
	// least, checked below), and the block's last byte, a NUL of its own
	// after the stage's block (encodeHelper), stays as it was.
	u64 *stage = at(h->stage, h->stage_size);
	if (h->stage_size < 48)
		refuse(B_RANGE);
	struct statx st;
	s64 r = sys5(SYS_statx, AT_FDCWD, "/", 0, STATX_INO | STATX_MNT_ID, &st);
	if (r < 0)
		fail(H_STATX_ROOT, 0, errno_of(r), 0);
	if (!(st.mask & STATX_MNT_ID))
		fail(H_STATX_ROOT, 0, 0, 1);
	stage[3] = st.mnt_id;
	stage[4] = mkdev(st.dev_major, st.dev_minor);
	stage[5] = st.ino;
	// A stage that ended first (its report says why) leaves EPIPE here:
	// SIGPIPE is blocked.
	r = write_full(blk_w, (u8 *)stage, h->stage_size);
	sys1(SYS_close, blk_w);
	if (r < 0 && errno_of(r) != EPIPE)
		fail(H_STAGE_WRITE, 0, errno_of(r), 0);
}

static u64 now_ns(void);

struct timespec {
	s64 sec, nsec;
};

// moved_guess is the try'th number past MAX_MOVED to try: the clock's
// nanoseconds and seconds, mixed with try, in 1001..2000001000.
static u64 moved_guess(u64 try)
{
	struct timespec ts = {0};
	sys2(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	u64 v = (u64)ts.nsec ^ (u64)ts.sec << 20 ^ try * 2654435761u;
	return MAX_MOVED + 1 + v % 2000000000u;
}

// ---- Counting tasks (tasks_linux.go) ----
//
// Where the process limit is one that reports nothing when it refuses a
// fork (RLIMIT_NPROC, pid_max), the helper counts the tasks of this pid
// namespace but its own, and keeps the most seen; the server decides from
// that whether the limit was reached. Every 20 ms, every millisecond past
// half the limit, and whenever an orphan is reaped (a fork bomb's
// processes are orphans, reaped while it is at its peak).

static int proc_fd = -1;
static u64 task_peak, last_count_ns;
static u8 dents[32 << 10];
#define MAX_PIDS (64 << 10)
static u32 pids[MAX_PIDS];

// threads_of reads num_threads, the 20th field of /proc/PID/stat, counted
// from the last ')' (the command name may hold spaces and parentheses); 0
// when it cannot.
static u64 threads_of(u32 pid)
{
	char path[16];
	char *p = put_dec(path, pid);
	for (const char *s = "/stat"; *s;)
		*p++ = *s++;
	*p = 0;
	s64 fd = sys4(SYS_openat, proc_fd, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	char b[512];
	s64 n = sys3(SYS_read, fd, b, sizeof b);
	sys1(SYS_close, fd);
	if (n <= 0)
		return 0;
	s64 i = n - 1;
	while (i >= 0 && b[i] != ')')
		i--;
	if (i < 0)
		return 0;
	// Fields after ')': state is the first, num_threads the 18th.
	int field = 0;
	for (i++; i < n; i++) {
		if (b[i] == ' ') {
			field++;
			continue;
		}
		if (field == 18) {
			u64 v = 0;
			while (i < n && b[i] >= '0' && b[i] <= '9')
				v = v * 10 + (u64)(b[i++] - '0');
			return v;
		}
	}
	return 0;
}

// count_tasks counts the tasks now, keeps the peak, and returns the count.
// From half the limit on, threads are not counted (a fork bomb's
// processes have one each, and reading each one's stat would slow the
// count down when it must be quick).
static u64 count_tasks(struct header *h, u64 now)
{
	u64 n = 0, kept = 0;
	if (sys3(SYS_lseek, proc_fd, 0, 0) == 0) {
		for (;;) {
			s64 got = sys3(SYS_getdents64, proc_fd, dents, sizeof dents);
			if (errno_of(got) == EINTR)
				continue;
			if (got <= 0)
				break;
			for (s64 off = 0; off + 19 <= got;) {
				u16 reclen = (u16)(dents[off + 16] | dents[off + 17] << 8);
				if (reclen < 19 || off + reclen > got)
					break;
				u64 pid = 0;
				int numeric = 1;
				for (s64 k = off + 19; k < off + reclen && dents[k]; k++) {
					if (dents[k] < '0' || dents[k] > '9') {
						numeric = 0;
						break;
					}
					pid = pid * 10 + (dents[k] - '0');
				}
				if (numeric && pid > 1) {
					n++;
					if (kept < MAX_PIDS)
						pids[kept++] = (u32)pid;
				}
				off += reclen;
			}
		}
	}
	if (n < h->tasks_limit / 2 && kept == n) {
		u64 t = 0;
		for (u64 k = 0; k < kept; k++) {
			u64 th = threads_of(pids[k]);
			t += th ? th : 1;
		}
		n = t;
	}
	if (n > task_peak)
		task_peak = n;
	last_count_ns = now;
	return n;
}

// ---- The end ----

struct statfs {
	s64 type, bsize;
	u64 blocks, bfree, bavail, files, ffree;
	s32 fsid[2];
	s64 namelen, frsize, flags, spare[4];
};
#define TMPFS_MAGIC 0x01021994

// full_tmp returns 1 + the index of the first tmpfs of the block's list
// with less than 1% free, or 0 (limitReached in helper_linux.go).
static u64 full_tmp(struct header *h)
{
	if (h->n_tmp > block_size / 8)
		refuse(B_RANGE);
	u64 *offs = at(h->tmp, h->n_tmp * 8);
	for (u64 i = 0; i < h->n_tmp; i++) {
		struct statfs st;
		if (sys2(SYS_statfs, string(offs[i]), &st) < 0)
			continue;
		if (st.type == TMPFS_MAGIC && st.blocks > 0 && st.bavail * 100 < st.blocks)
			return i + 1;
	}
	return 0;
}

struct rusage {
	s64 utime[2], stime[2];
	s64 maxrss;
	s64 rest[13];
};

static __attribute__((noreturn)) void finish(struct header *h, u32 flags, u64 status, u64 maxrss_kib)
{
	if (proc_fd >= 0)
		count_tasks(h, now_ns()); // once more, as peak() does
	put(K_EXIT, 0, flags, 0, status, maxrss_kib, task_peak, full_tmp(h));
	// The kernel kills what is left in the pid namespace.
	exit_now(0);
}

static u64 now_ns(void)
{
	struct timespec ts;
	s64 r = sys2(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	if (r < 0)
		fail(H_CLOCK, 0, errno_of(r), 0);
	return (u64)ts.sec * 1000000000ul + (u64)ts.nsec;
}

// reap waits for every process reparented to this one until the stage (then
// the command) exits, passes signals on, and ends the call at its
// deadline. It reaps at most a round of children between two looks at the
// deadline and the signals: a command that keeps dead children coming
// (clone with CLONE_PARENT) must not hold the loop.
#define REAP_ROUND 64
static __attribute__((noreturn)) void reap(struct header *h, s64 stage, u64 sigs)
{
	u64 deadline = h->timeout_ns ? now_ns() + h->timeout_ns : 0;
	u64 every = proc_fd >= 0 ? 1 : 0; // the next count's delay, when tasks are counted
	int more = 0; // a round ended with children perhaps left to reap
	for (;;) {
		u64 now = now_ns();
		if (deadline && now >= deadline)
			finish(h, EXIT_TIMED_OUT, SIGKILL, 0);
		if (every && now - last_count_ns >= every)
			every = count_tasks(h, now) >= h->tasks_limit / 2 ? 1000000ul : 20000000ul;
		u64 wake = deadline;
		if (every && (wake == 0 || last_count_ns + every < wake))
			wake = last_count_ns + every;
		struct timespec ts, *tp = 0;
		if (more) {
			ts.sec = ts.nsec = 0; // only what is pending: then the next round
			tp = &ts;
		} else if (wake) {
			now = now_ns();
			u64 left = wake > now ? wake - now : 0;
			ts.sec = (s64)(left / 1000000000ul);
			ts.nsec = (s64)(left % 1000000000ul);
			tp = &ts;
		}
		u8 info[128];
		s64 sig = sys4(SYS_rt_sigtimedwait, &sigs, info, tp, 8);
		if (errno_of(sig) == EINTR)
			continue;
		if (errno_of(sig) == EAGAIN) {
			if (!more)
				continue; // a deadline, checked above
			sig = SIGCHLD;
		} else if (sig < 0) {
			fail(H_WAIT, 1, errno_of(sig), 0);
		}
		if (sig != SIGCHLD) {
			sys2(SYS_kill, stage, sig);
			continue;
		}
		more = 0;
		for (int n = 0;; n++) {
			if (n == REAP_ROUND) {
				more = 1;
				break;
			}
			s32 status;
			struct rusage ru;
			s64 pid = sys4(SYS_wait4, -1, &status, WNOHANG, &ru);
			if (pid == 0 || errno_of(pid) == ECHILD)
				break;
			if (errno_of(pid) == EINTR)
				continue;
			if (pid < 0)
				fail(H_WAIT, 0, errno_of(pid), 0);
			if (pid == stage)
				finish(h, 0, (u32)status, (u64)ru.maxrss);
			// An orphan reparented to this process: a fork bomb's are,
			// reaped while it is at its peak.
			if (proc_fd >= 0 && (now = now_ns()) - last_count_ns >= 200000)
				count_tasks(h, now);
		}
	}
}

// strlen of a string known to end inside the block.
static u64 length(const char *s)
{
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

// ended ends this process as the helper pid ended, wait status status:
// with its exit code, or killed by its signal.
static __attribute__((noreturn)) void ended(s32 status)
{
	int sig = status & 0x7f;
	if (sig == 0)
		exit_now((status >> 8) & 0xff);
	u64 none = 0;
	sys4(SYS_rt_sigprocmask, SIG_SETMASK, &none, 0, 8);
	sys2(SYS_kill, sys0(SYS_getpid), sig);
	exit_now(128 + sig); // a signal this process ignores
}

// launch starts the helper in the sandbox's namespaces. The server
// starts this process in none of them, which costs it a vfork and an
// exec of a small program, not a full fork of itself (a Go process
// cannot vfork into a new user namespace: the parent must write the
// child's maps while the child waits). So this one does what the
// server's fork did: clones the helper into the namespaces, writes its
// maps from the parent namespace, and lets it go on; the helper, which
// continues from here, becomes its namespace's 0 where the caller is
// root. This process then only passes the signals it gets on to the
// helper, and ends as the helper does, which the server waits for. It
// holds none of the call's descriptors by then: the helper has its own.
static void launch(struct header *h, u64 sigs)
{
	int sync[2];
	s64 r;
	if ((r = sys2(SYS_pipe2, sync, O_CLOEXEC)) < 0)
		fail(H_LAUNCH, LS_PIPE, errno_of(r), 0);
	// Dumpable across the clone: the /proc files of a process that is not
	// are root's, and an unprivileged launcher could not write the
	// helper's maps. The helper is not dumpable again before it does
	// anything else; this process, outside the sandbox's pid namespace,
	// is not in its /proc at all.
	if ((r = sys5(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0)) < 0)
		fail(H_DUMPABLE, 0, errno_of(r), 0);
	// Fork semantics (no new stack): this process has one thread.
	s64 pid = sys5(SYS_clone, (s64)(h->clone_flags | SIGCHLD), 0, 0, 0, 0);
	if (pid < 0)
		fail(H_LAUNCH, LS_CLONE, errno_of(pid), 0);
	if (pid == 0) {
		// The helper. A session of its own first, as the server's
		// fork gave the Go helper: else the command, in the launcher's
		// process group, could signal the launcher (kill(0, ...)),
		// which is outside the pid namespace's shelter for pid 1.
		sys1(SYS_close, sync[1]);
		if ((r = sys0(SYS_setsid)) < 0)
			fail(H_LAUNCH, LS_SETSID, errno_of(r), 0);
		u8 b;
		if (read_full(sync[0], &b, 1) != 1)
			exit_now(255); // the launcher failed, and said why, or died
		if ((r = sys5(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0)) < 0)
			fail(H_DUMPABLE, 0, errno_of(r), 0);
		if (h->launch & L_BECOME_ROOT) {
			if ((r = sys2(SYS_setgroups, 0, 0)) < 0)
				fail(H_LAUNCH, LS_DROP_GROUPS, errno_of(r), 0);
			if ((r = sys3(SYS_setresgid, 0, 0, 0)) < 0)
				fail(H_LAUNCH, LS_SETRESGID, errno_of(r), 0);
			if ((r = sys3(SYS_setresuid, 0, 0, 0)) < 0)
				fail(H_LAUNCH, LS_SETRESUID, errno_of(r), 0);
		}
		// Killed if the launcher dies: set after the ids change, which
		// clears it. The launcher keeps its end of the pipe until it
		// ends, so an end of file now says it died before this was set
		// (getppid cannot tell: the launcher is outside this pid
		// namespace).
		if ((r = sys5(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)) < 0)
			fail(H_LAUNCH, LS_PDEATHSIG, errno_of(r), 0);
		sys3(SYS_fcntl, sync[0], F_SETFL, O_NONBLOCK);
		if (sys3(SYS_read, sync[0], &b, 1) == 0)
			exit_now(255);
		sys1(SYS_close, sync[0]);
		return;
	}
	sys1(SYS_close, sync[0]);
	const char *uid_map = string(h->uid_map), *gid_map = string(h->gid_map);
	if (!(h->launch & L_SETGROUPS) && (r = write_proc(pid, "setgroups", "deny", 4)) < 0)
		fail(H_LAUNCH_SETGROUPS, 0, errno_of(r), 0);
	if ((r = write_proc(pid, "uid_map", uid_map, length(uid_map))) < 0)
		fail(H_LAUNCH_UID_MAP, 0, errno_of(r), 0);
	if ((r = write_proc(pid, "gid_map", gid_map, length(gid_map))) < 0)
		fail(H_LAUNCH_GID_MAP, 0, errno_of(r), 0);
	u8 go = 1;
	if ((r = write_full(sync[1], &go, 1)) < 0)
		fail(H_LAUNCH, LS_SYNC, errno_of(r), 0);
	sys5(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0);
	// Nothing of the call's stays here but the pipe's end, kept open
	// for as long as this process lives (see the helper's side).
	sys3(SYS_close_range, 0, (u32)sync[1] - 1, 0);
	sys3(SYS_close_range, (u32)sync[1] + 1, ~0u, 0);
	for (;;) {
		u8 info[128];
		s64 sig = sys4(SYS_rt_sigtimedwait, &sigs, info, 0, 8);
		if (sig < 0)
			continue; // EINTR; nothing else can fail here
		if (sig != SIGCHLD) {
			sys2(SYS_kill, pid, sig);
			continue;
		}
		s32 status;
		if (sys4(SYS_wait4, pid, &status, WNOHANG, 0) == pid)
			ended(status);
	}
}

// hold is a launched HF_HOLD process (see HF_HOLD): it says its pid, in
// the server's pid namespace (it was launched into no other), and waits
// until the server closes the block pipe.
static __attribute__((noreturn)) void hold(void)
{
	put(K_HELD, 0, 0, 0, (u64)sys0(SYS_getpid), 0, 0, 0);
	u8 b;
	while (sys3(SYS_read, 3, &b, 1) > 0)
		;
	exit_now(0);
}

static void run_ops(struct header *h)
{
	if (h->n_ops > block_size / sizeof(struct op))
		refuse(B_RANGE);
	struct op *ops = at(h->ops, h->n_ops * sizeof(struct op));
	for (u64 i = 0; i < h->n_ops; i++)
		run_op(h, i, &ops[i]);
}

__attribute__((noreturn, used)) void helper_main(void)
{
	// Not dumpable: the command runs as the same host uid, and must not
	// reach this process's memory or descriptors through /proc/1.
	s64 r = sys5(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (r < 0)
		fail(H_DUMPABLE, 0, errno_of(r), 0);
	// A name for ps and top, which would show the descriptor number it
	// was executed from (argv[0] says "nanosandbox-mcp: sandbox").
	sys5(SYS_prctl, PR_SET_NAME, "nsb-sandbox", 0, 0, 0);
	// The signals the wait loop takes, blocked before anything can send
	// them; SIGPIPE too, so a stage that ended early is an EPIPE.
	u64 sigs = SIGBIT(SIGCHLD) | SIGBIT(SIGINT) | SIGBIT(SIGTERM) | SIGBIT(SIGHUP) | SIGBIT(SIGQUIT);
	u64 mask = sigs | SIGBIT(SIGPIPE);
	if ((r = sys4(SYS_rt_sigprocmask, SIG_BLOCK, &mask, 0, 8)) < 0)
		fail(H_SIGMASK, 0, errno_of(r), 0);

	struct header *h = read_block();
	if (h->clone_flags)
		launch(h, sigs); // returns in the helper
	if (h->flags & HF_HOLD) {
		if (!(h->flags & HF_START) || h->clone_flags != CLONE_NEWUSER || h->n_ops)
			refuse(B_OP);
		hold();
	}
	s64 stage = -1;
	int blk_w = -1;
	if (h->flags & HF_START) {
		// A helper started ahead of its call (a spare): the scratch root,
		// then the stage, which waits for its block, then the call.
		run_ops(h);
		stage = spawn_stage(h->uid, h->gid, h->stage_fd, &blk_w);
		h = read_block();
		if (h->flags & HF_START)
			refuse(B_OP);
		// A stage that ended while this helper waited cannot run the
		// call: end without taking it, and the server hands it to another.
		s32 status;
		if (sys4(SYS_wait4, stage, &status, WNOHANG, 0) == stage)
			fail(H_STAGE_ENDED, 0, 0, 0);
	}
	put(K_TOOK, 0, 0, 0, 0, 0, 0, 0);
	run_ops(h);
	// Nothing inherited above the report pipe reaches the command but
	// through the stage, which closes it all before its execve; the
	// stage's memfd too (execveat of an ELF from it works).
	if ((r = sys3(SYS_close_range, 5, ~0u, CLOSE_RANGE_CLOEXEC)) < 0)
		fail(H_CLOSE_RANGE, 0, errno_of(r), 0);
	if (stage < 0)
		stage = spawn_stage(h->uid, h->gid, h->stage_fd, &blk_w);
	// /proc, for counting tasks, opened before the command runs: a
	// failure is a setup failure, not one during the call.
	if (h->tasks_limit) {
		proc_fd = (int)sys4(SYS_openat, AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
		if (proc_fd < 0)
			fail(H_PROC, 0, errno_of(proc_fd), 0);
	}
	hand_stage(h, blk_w);
	reap(h, stage, sigs);
}
