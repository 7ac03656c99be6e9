package measure

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ClockTick is the unit of utime and stime in /proc/<pid>/stat. Linux fixes
// USER_HZ at 100 for user space on every architecture it exports /proc for.
const ClockTick = 10 * time.Millisecond

// ErrNoProcess is returned when /proc has no entry for the pid (the process
// has exited or never existed).
var ErrNoProcess = errors.New("measure: no such process")

// CPUTime returns the user+system CPU time the process pid has used so far,
// read from /proc/<pid>/stat.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, ErrNoProcess
		}
		return 0, err
	}
	ticks, err := ParseStatTicks(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ticks) * ClockTick, nil
}

// ParseStatTicks returns utime+stime (fields 14 and 15, in clock ticks) of
// a /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func ParseStatTicks(stat []byte) (uint64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	// After ") " come field 3 (state), 4, 5, ...; utime is field 14.
	fields := bytes.Fields(stat[end+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("only %d fields after the command name", len(fields))
	}
	u, err := strconv.ParseUint(string(fields[utime]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	s, err := strconv.ParseUint(string(fields[stime]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return u + s, nil
}

// ParseStatMinorFaults returns minflt (field 10: page faults served
// without reading the disk) of a /proc/<pid>/stat line.
func ParseStatMinorFaults(stat []byte) (uint64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	fields := bytes.Fields(stat[end+1:])
	const minflt = 10 - 3
	if len(fields) <= minflt {
		return 0, fmt.Errorf("only %d fields after the command name", len(fields))
	}
	n, err := strconv.ParseUint(string(fields[minflt]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("minflt: %w", err)
	}
	return n, nil
}

// RSS returns the resident set size of process pid in bytes, read from the
// VmRSS line of /proc/<pid>/status.
func RSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, ErrNoProcess
		}
		return 0, err
	}
	v, err := ParseStatusRSS(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return v, nil
}

// ParseStatusRSS returns the VmRSS value of a /proc/<pid>/status text in
// bytes (the file states it in kB).
func ParseStatusRSS(status []byte) (uint64, error) {
	return ParseStatusKB(status, "VmRSS")
}

// ParseStatusCount returns the plain number on the line key of a
// /proc/<pid>/status text (voluntary_ctxt_switches, Threads …).
func ParseStatusCount(status []byte, key string) (uint64, error) {
	prefix := []byte(key + ":")
	for line := range bytes.SplitSeq(status, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("no %s line", key)
}

// ParseStatusKB returns the value of the line key (VmRSS, RssAnon,
// RssFile, VmHWM …) of a /proc/<pid>/status text in bytes; the file states
// these in kB.
func ParseStatusKB(status []byte, key string) (uint64, error) {
	prefix := []byte(key + ":")
	for line := range bytes.SplitSeq(status, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("%s line %q: want '<n> kB'", key, line)
		}
		kb, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no %s line (kernel thread or zombie?)", key)
}

// CPUPercent is the share of one core that cpu represents over wall, in
// percent (150 means one and a half cores busy).
func CPUPercent(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * cpu.Seconds() / wall.Seconds()
}
