package sandbox

import "strings"

// rlimitMemory says what RLIMIT_DATA counts, and what it does not, in lines
// for --check under the memory limit. The README says the same; the e2e
// test TestLimitRlimitCountsNoMore holds a command to it.
var rlimitMemory = []string{
	"counts each process's heap, thread stacks and private mappings (RLIMIT_DATA),",
	"but not: the command's processes together (up to --max-processes of them),",
	"shared memory (MAP_SHARED mappings, memfd, SysV shm), the main thread's stack",
	"(RLIMIT_STACK, which a command may raise), pipe and socket buffers, files in the",
	"private /tmp, /var/tmp, /run and /dev/shm (up to --tmp-size each), the page",
	"cache, or kernel memory (page tables, inodes, message queues...); a delegated",
	"cgroup v2 counts all of it but kernel memory the kernel does not charge to",
	"cgroups",
}

// Caveats tells the model, in a sentence or two, where a limit is weaker
// than its value suggests, and what differs on macOS; empty when nothing
// does.
func (m Mechanisms) Caveats() string {
	var c []string
	if m.Seatbelt {
		c = append(c, "On macOS, /tmp is read-only: write temporary files under $TMPDIR, a private directory fresh for each call; "+
			"there is no network at all, loopback included, and no memory limit.")
	}
	if m.Memory == ByRlimit {
		c = append(c, "Memory is limited per process, counting heap, thread stacks and private mappings: "+
			"shared memory (MAP_SHARED, memfd, SysV), the main thread's stack, pipe and socket buffers, "+
			"files in /tmp and kernel memory are not counted.")
	}
	return strings.Join(c, " ")
}

// indentLines writes lines under a limit's value in Report.
func indentLines(b *strings.Builder, lines []string) {
	for _, l := range lines {
		b.WriteString("                 " + l + "\n")
	}
}
