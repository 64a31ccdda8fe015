// Raw system calls for the freestanding programs here (stage.c, helper.c).
// No libc: the kernel's calling convention, the numbers of x86_64 and
// aarch64, the few types and constants used, and the helpers both need.

#ifndef NSB_SYS_H
#define NSB_SYS_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long u64;
typedef long s64;

_Static_assert(sizeof(u64) == 8 && sizeof(void *) == 8, "64-bit targets only");

#if defined(__x86_64__)
enum {
	SYS_read = 0, SYS_write = 1, SYS_close = 3, SYS_lseek = 8, SYS_mmap = 9, SYS_ioctl = 16,
	SYS_rt_sigprocmask = 14, SYS_getpid = 39, SYS_socket = 41, SYS_sendmsg = 46,
	SYS_bind = 49, SYS_listen = 50, SYS_clone = 56, SYS_execve = 59, SYS_wait4 = 61,
	SYS_kill = 62, SYS_fcntl = 72, SYS_chdir = 80, SYS_getuid = 102,
	SYS_setsid = 112, SYS_setgroups = 116, SYS_setresuid = 117, SYS_setresgid = 119,
	SYS_capget = 125, SYS_capset = 126, SYS_rt_sigtimedwait = 128, SYS_statfs = 137,
	SYS_pivot_root = 155, SYS_prctl = 157, SYS_mount = 165, SYS_umount2 = 166,
	SYS_getdents64 = 217, SYS_clock_gettime = 228, SYS_exit_group = 231, SYS_openat = 257, SYS_mkdirat = 258,
	SYS_unlinkat = 263, SYS_symlinkat = 266, SYS_dup3 = 292, SYS_pipe2 = 293,
	SYS_prlimit64 = 302, SYS_renameat2 = 316, SYS_seccomp = 317, SYS_execveat = 322, SYS_statx = 332,
};
#define O_NOFOLLOW 0400000
#define O_DIRECTORY 0200000
// The kernel's calling convention: number in rax, arguments in rdi, rsi,
// rdx, r10, r8, r9; rcx and r11 are clobbered.
static s64 sys6(s64 n, s64 a, s64 b, s64 c, s64 d, s64 e, s64 f)
{
	register s64 r10 __asm__("r10") = d;
	register s64 r8 __asm__("r8") = e;
	register s64 r9 __asm__("r9") = f;
	s64 ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
// The entry point: the stack pointer is 16-byte aligned at entry, and a
// call pushes the return address, as the ABI expects.
#define NSB_START(fn) __asm__(".text\n.global _start\n_start:\n\txor %ebp,%ebp\n\tcall " #fn "\n\thlt\n")
#elif defined(__aarch64__)
enum {
	SYS_dup3 = 24, SYS_fcntl = 25, SYS_ioctl = 29, SYS_mkdirat = 34, SYS_unlinkat = 35,
	SYS_symlinkat = 36, SYS_umount2 = 39, SYS_mount = 40, SYS_pivot_root = 41,
	SYS_statfs = 43, SYS_chdir = 49, SYS_openat = 56, SYS_close = 57, SYS_pipe2 = 59,
	SYS_getdents64 = 61, SYS_lseek = 62,
	SYS_read = 63, SYS_write = 64, SYS_capget = 90, SYS_capset = 91,
	SYS_exit_group = 94, SYS_clock_gettime = 113, SYS_kill = 129,
	SYS_setresuid = 147, SYS_setresgid = 149, SYS_setsid = 157, SYS_setgroups = 159,
	SYS_rt_sigprocmask = 135, SYS_rt_sigtimedwait = 137, SYS_prctl = 167,
	SYS_getpid = 172, SYS_getuid = 174, SYS_socket = 198, SYS_bind = 200,
	SYS_listen = 201, SYS_sendmsg = 211, SYS_clone = 220, SYS_execve = 221,
	SYS_mmap = 222, SYS_wait4 = 260, SYS_prlimit64 = 261, SYS_renameat2 = 276, SYS_seccomp = 277,
	SYS_execveat = 281, SYS_statx = 291,
};
#define O_NOFOLLOW 0100000
#define O_DIRECTORY 040000
// Number in x8, arguments in x0-x5, result in x0.
static s64 sys6(s64 n, s64 a, s64 b, s64 c, s64 d, s64 e, s64 f)
{
	register s64 x8 __asm__("x8") = n;
	register s64 x0 __asm__("x0") = a;
	register s64 x1 __asm__("x1") = b;
	register s64 x2 __asm__("x2") = c;
	register s64 x3 __asm__("x3") = d;
	register s64 x4 __asm__("x4") = e;
	register s64 x5 __asm__("x5") = f;
	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#define NSB_START(fn) __asm__(".text\n.global _start\n_start:\n\tmov x29, #0\n\tmov x30, #0\n\tbl " #fn "\n\tbrk #0\n")
#else
#error "built for x86_64 and aarch64 only"
#endif

// The same numbers on both (the generic table, past the old ones).
enum {
	SYS_open_tree = 428, SYS_move_mount = 429, SYS_fsopen = 430, SYS_fsconfig = 431,
	SYS_fsmount = 432, SYS_close_range = 436, SYS_openat2 = 437, SYS_faccessat2 = 439,
	SYS_mount_setattr = 442, SYS_landlock_create_ruleset = 444,
	SYS_landlock_add_rule = 445, SYS_landlock_restrict_self = 446,
};

#define sys0(n) sys6(n, 0, 0, 0, 0, 0, 0)
#define sys1(n, a) sys6(n, (s64)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (s64)(a), (s64)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (s64)(a), (s64)(b), (s64)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) sys6(n, (s64)(a), (s64)(b), (s64)(c), (s64)(d), 0, 0)
#define sys5(n, a, b, c, d, e) sys6(n, (s64)(a), (s64)(b), (s64)(c), (s64)(d), (s64)(e), 0)

// A raw system call returns -errno in [-4095, -1].
static inline int errno_of(s64 r) { return r < 0 && r >= -4095 ? (int)-r : 0; }

enum {
	EPERM = 1, ENOENT = 2, EINTR = 4, EAGAIN = 11, EACCES = 13, ENOTDIR = 20,
	EISDIR = 21, EINVAL = 22, ECHILD = 10, EPIPE = 32, EEXIST = 17, ELOOP = 40,
	AT_FDCWD = -100, AT_SYMLINK_NOFOLLOW = 0x100, AT_EMPTY_PATH = 0x1000, AT_RECURSIVE = 0x8000,
	O_RDONLY = 0, O_WRONLY = 1, O_CREAT = 0100, O_EXCL = 0200, O_TRUNC = 01000,
	O_PATH = 010000000, O_CLOEXEC = 02000000,
	PROT_READ = 1, PROT_WRITE = 2, MAP_PRIVATE = 2, MAP_ANONYMOUS = 0x20,
	STATX_TYPE = 1, STATX_MODE = 2, STATX_INO = 0x100, STATX_MNT_ID = 0x1000,
	S_IFMT = 0170000, S_IFDIR = 0040000, S_IFREG = 0100000, S_IFLNK = 0120000,
	RENAME_NOREPLACE = 1,
	F_SETFD = 2, FD_CLOEXEC = 1, F_SETFL = 4, O_NONBLOCK = 04000,
	CLOSE_RANGE_CLOEXEC = 4,
};

// struct statx, as far as it is read.
struct statx {
	u32 mask, blksize;
	u64 attributes;
	u32 nlink, uid, gid;
	u16 mode, spare0;
	u64 ino, size, blocks, attributes_mask;
	u64 times[8]; // atime, btime, ctime, mtime: 16 bytes each
	u32 rdev_major, rdev_minor, dev_major, dev_minor;
	u64 mnt_id;
	u64 rest[13];
};
_Static_assert(sizeof(struct statx) == 256, "struct statx");

static inline __attribute__((noreturn)) void exit_now(int code)
{
	for (;;)
		sys1(SYS_exit_group, code);
}

// The compiler may emit calls to these for struct copies and zeroing.
void *memset(void *d, int c, u64 n)
{
	u8 *p = d;
	while (n--)
		*p++ = (u8)c;
	return d;
}
void *memcpy(void *d, const void *s, u64 n)
{
	u8 *p = d;
	const u8 *q = s;
	while (n--)
		*p++ = *q++;
	return d;
}

// read_full reads up to n bytes, until n or EOF; it returns how many, or
// -errno.
static inline s64 read_full(int fd, u8 *p, u64 n)
{
	u64 got = 0;
	while (got < n) {
		s64 r = sys3(SYS_read, fd, p + got, n - got);
		if (errno_of(r) == EINTR)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			break;
		got += (u64)r;
	}
	return (s64)got;
}

// write_full writes n bytes; it returns 0 or -errno.
static inline s64 write_full(int fd, const u8 *p, u64 n)
{
	while (n > 0) {
		s64 r = sys3(SYS_write, fd, p, n);
		if (errno_of(r) == EINTR)
			continue;
		if (r < 0)
			return r;
		p += r;
		n -= (u64)r;
	}
	return 0;
}

static inline u64 mkdev(u64 major, u64 minor)
{
	// As glibc's makedev and Go's unix.Mkdev.
	return ((major & 0x00000fff) << 8) | ((major & 0xfffff000) << 32) |
	       ((minor & 0x000000ff) << 0) | ((minor & 0xffffff00) << 12);
}

#endif
