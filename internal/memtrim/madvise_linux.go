package memtrim

import "syscall"

// dontNeed drops the span's pages from the process's page tables.
func dontNeed(s Span) error {
	_, _, e := syscall.Syscall(syscall.SYS_MADVISE, s.Start, s.Len(), syscall.MADV_DONTNEED)
	if e != 0 {
		return e
	}
	return nil
}
