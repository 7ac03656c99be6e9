package memtrim

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Span is one mapping of /proc/self/maps that Release drops.
type Span struct {
	Start, End uintptr
}

// Len is the span's length in bytes.
func (s Span) Len() uintptr { return s.End - s.Start }

// Result is what one Release did.
type Result struct {
	Spans    []Span // the executable's read-only mappings it dropped
	Released uintptr
	Err      error // the first madvise that failed, if any (the rest went on)
}

// Release drops the executable's read-only mappings from the process (on
// Linux; elsewhere only the heap is returned) and returns the free heap to
// the operating system. See the package documentation.
func Release() Result {
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Result{Err: fmt.Errorf("memtrim: %w", err)}
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return Result{Err: fmt.Errorf("memtrim: %w", err)}
	}
	res := Result{Spans: ReadOnlySpans(string(maps), exe)}
	for _, s := range res.Spans {
		if err := dontNeed(s); err != nil {
			if res.Err == nil {
				res.Err = fmt.Errorf("memtrim: madvise %#x-%#x: %w", s.Start, s.End, err)
			}
			continue
		}
		res.Released += s.Len()
	}
	return res
}

// ReadOnlySpans returns the mappings of a /proc/PID/maps text that are the
// file exe, private and not writable: the executable's code and read-only
// data. Writable mappings (its initialised data, which the process may have
// changed) and every other file are left out, as are lines it cannot read.
func ReadOnlySpans(maps, exe string) []Span {
	var out []Span
	for line := range strings.SplitSeq(maps, "\n") {
		// address perms offset dev inode path
		f := strings.Fields(line)
		if len(f) != 6 || f[5] != exe {
			continue
		}
		perms := f[1]
		if len(perms) != 4 || perms[1] != '-' || perms[3] != 'p' {
			continue // writable, or shared
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, Span{Start: uintptr(start), End: uintptr(end)})
	}
	return out
}
