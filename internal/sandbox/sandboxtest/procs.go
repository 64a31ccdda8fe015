package sandboxtest

import (
	"os"
	"strconv"
	"strings"
)

// Stat reads a process's parent and state ("S", "Z", ...) from
// /proc/PID/stat; ok is false when there is no such process.
func Stat(pid int) (ppid int, state string, ok bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// The fields after the name in parentheses, which may hold anything.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err == nil
}

// Descendants lists the live processes (zombies left out) below pid.
func Descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, state, ok := Stat(p); ok && state != "Z" {
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
