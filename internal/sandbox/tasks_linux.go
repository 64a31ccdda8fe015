package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// processSampleInterval is how often the helper counts the sandbox's tasks
// when the process limit is one that reports nothing itself.
const processSampleInterval = 20 * time.Millisecond

// taskCounter counts the command's tasks, the processes and threads in
// this pid namespace but the helper (pid 1), and keeps the most it has
// seen. It reads /proc through one open descriptor into one buffer, so a
// count stays quick while a fork bomb competes for the CPU.
type taskCounter struct {
	mu    sync.Mutex
	proc  int
	buf   []byte
	pids  []int
	limit int
	most  int
	last  time.Time
}

func newTaskCounter(limit int) (*taskCounter, error) {
	fd, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /proc: %w", err)
	}
	return &taskCounter{proc: fd, buf: make([]byte, 32<<10), limit: limit}, nil
}

// watch samples the count for as long as the helper runs. Nothing reports
// a fork refused by RLIMIT_NPROC or pid_max, and a fork bomb's processes
// may be gone by the end: it counts every 20ms, every millisecond while
// the count is past half the limit; the helper counts too whenever it
// reaps an orphan. A shell fork bomb can rise to the limit and die out
// within 10ms, between two timed samples, but its processes are orphans:
// the helper reaps them while the bomb is at its peak.
func (c *taskCounter) watch() {
	t := time.NewTimer(processSampleInterval)
	for {
		if c.sample() >= c.limit/2 {
			t.Reset(time.Millisecond)
		} else {
			t.Reset(processSampleInterval)
		}
		<-t.C
	}
}

// sample counts the tasks now and returns the count.
func (c *taskCounter) sample() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.countLocked()
}

// sampleAfter counts the tasks unless the last count is more recent than d.
func (c *taskCounter) sampleAfter(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.last) >= d {
		c.countLocked()
	}
}

// peak returns the most tasks seen at once, counting them once more.
func (c *taskCounter) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.countLocked()
	return c.most
}

// countLocked counts the tasks. From half the limit on, threads are not
// counted: a fork bomb's processes have one each, and reading every
// process's thread count would slow the count down when it must be quick.
func (c *taskCounter) countLocked() int {
	c.pids = c.pids[:0]
	if _, err := unix.Seek(c.proc, 0, io.SeekStart); err == nil {
		for {
			n, err := unix.Getdents(c.proc, c.buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			c.pids = appendPids(c.pids, c.buf[:n])
		}
	}
	n := len(c.pids)
	if n < c.limit/2 {
		n = 0
		for _, pid := range c.pids {
			n += max(threadsOf(c.proc, pid), 1)
		}
	}
	c.most = max(c.most, n)
	c.last = time.Now()
	return n
}

// appendPids appends the process ids among the linux_dirent64 records in
// buf, leaving out pid 1.
func appendPids(pids []int, buf []byte) []int {
	for len(buf) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < 19 || reclen > len(buf) {
			break
		}
		name := buf[19:reclen]
		pid := 0
		for _, b := range name {
			if b == 0 {
				break
			}
			if b < '0' || b > '9' {
				pid = -1
				break
			}
			pid = pid*10 + int(b-'0')
		}
		if pid > 1 {
			pids = append(pids, pid)
		}
		buf = buf[reclen:]
	}
	return pids
}

// threadsOf reads the thread count of process pid from its stat file, or
// returns 0 when it cannot.
func threadsOf(proc, pid int) int {
	fd, err := unix.Openat(proc, strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var b [512]byte
	n, err := unix.Read(fd, b[:])
	if err != nil || n <= 0 {
		return 0
	}
	return statThreads(b[:n])
}

// statThreads returns num_threads, the 20th field of a /proc/PID/stat
// line, or 0. The second field, the command name in parentheses, may hold
// spaces and parentheses itself, so fields are counted from the last ')'.
func statThreads(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 18 {
		return 0
	}
	n, _ := strconv.Atoi(fields[17]) // fields[0] is the 3rd field, state
	return n
}
