package procs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Proc is one process as /proc/<pid>/stat describes it.
type Proc struct {
	PID, PPID, PGID int
	State           byte // R, S, D, T, Z, …
	Comm            string
}

// Processes lists every process in /proc, zombies included (a zombie has
// ended and only waits for its parent to collect it: check State).
func Processes() []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || end+2 > len(s) {
			continue
		}
		f := strings.Fields(s[end+2:])
		if len(f) < 3 || len(f[0]) == 0 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		out = append(out, Proc{PID: pid, PPID: ppid, PGID: pgid, State: f[0][0], Comm: s[open+1 : end]})
	}
	return out
}

// LiveDescendants returns the processes that are not zombies and either
// are one of pids, belong to the process group of one of pids, or have one
// of pids as parent: what a supervisor that started pids left running.
func LiveDescendants(pids ...int) []Proc {
	set := map[int]bool{}
	for _, p := range pids {
		set[p] = true
	}
	var out []Proc
	for _, p := range Processes() {
		if p.State == 'Z' {
			continue
		}
		if set[p.PID] || set[p.PGID] || set[p.PPID] {
			out = append(out, p)
		}
	}
	return out
}
