// limit.c: the bounds on a run of git by the git guard (internal/gitguard),
// set before git starts. The guard's git reads what a command wrote (an
// index, a tree of billions of entries), so its address space and the
// size of any file it writes are bounded, in the process that then
// becomes git: nothing of git runs before the bounds hold. It did this
// through /bin/sh's ulimit, which costs a shell's start (about 0.9 ms) on
// every run; this program costs an exec of a few KiB.
//
//	argv: NAME AS_BYTES FSIZE_BYTES PATH [ARG...]
//
// Each bound is set, soft and hard, to the lower of the number given and
// the hard limit the process has (a lower one the server runs under
// holds). Then PATH (absolute: no search) is executed with the arguments
// from PATH on and the environment as given. Nothing else is changed.
// Any failure ends it, with a line on stderr and exit status 127, before
// PATH runs: it never runs git unbounded. A number that is not plain
// decimal, or does not fit, is refused the same way.

#define NSB_LIMIT_PROTOCOL 1

#include "sys.h"

// The entry point passes the stack pointer: argc, then argv, then envp.
#if defined(__x86_64__)
__asm__(".text\n.global _start\n_start:\n\txor %ebp,%ebp\n\tmov %rsp,%rdi\n\tcall limit_main\n\thlt\n");
#elif defined(__aarch64__)
__asm__(".text\n.global _start\n_start:\n\tmov x29, #0\n\tmov x30, #0\n\tmov x0, sp\n\tbl limit_main\n\tbrk #0\n");
#endif

enum { RLIMIT_FSIZE = 1, RLIMIT_AS = 9 }; // the generic numbers, on both

struct rlimit64 {
	u64 cur, max;
};

static __attribute__((noreturn)) void die(const char *what, int err)
{
	// "nanosandbox-mcp: git limits: WHAT (errno N)\n"
	char line[160];
	u64 n = 0;
	const char *parts[] = {"nanosandbox-mcp: git limits: ", what};
	for (int i = 0; i < 2; i++)
		for (const char *p = parts[i]; *p && n < 120; p++)
			line[n++] = *p;
	if (err) {
		const char *e = " (errno ";
		while (*e)
			line[n++] = *e++;
		char digits[12];
		int d = 0;
		do {
			digits[d++] = (char)('0' + err % 10);
			err /= 10;
		} while (err && d < 11);
		while (d)
			line[n++] = digits[--d];
		line[n++] = ')';
	}
	line[n++] = '\n';
	write_full(2, (const u8 *)line, n);
	exit_now(127);
}

// decimal parses s, digits only, at most 2^62; false otherwise.
static int decimal(const char *s, u64 *out)
{
	u64 v = 0;
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > ((u64)1 << 62) / 10)
			return 0;
		v = v * 10 + (u64)(*s - '0');
	}
	if (v > (u64)1 << 62)
		return 0;
	*out = v;
	return 1;
}

static void bound(int resource, const char *arg, const char *name)
{
	u64 want;
	if (!decimal(arg, &want))
		die(name, EINVAL);
	struct rlimit64 old, now;
	s64 r = sys4(SYS_prlimit64, 0, resource, 0, &old);
	if (r < 0)
		die(name, errno_of(r));
	if (old.max < want)
		want = old.max;
	now.cur = want;
	now.max = want;
	if ((r = sys4(SYS_prlimit64, 0, resource, &now, 0)) < 0)
		die(name, errno_of(r));
}

__attribute__((noreturn, used)) void limit_main(u64 *sp)
{
	u64 argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	if (argc < 4)
		die("usage: NAME AS_BYTES FSIZE_BYTES PATH [ARG...]", 0);
	if (argv[3][0] != '/')
		die("the program's path is not absolute", EINVAL);
	bound(RLIMIT_AS, argv[1], "address space bound");
	bound(RLIMIT_FSIZE, argv[2], "file size bound");
	s64 r = sys3(SYS_execve, argv[3], argv + 3, envp);
	die("execve", errno_of(r));
}
