package main

import (
	"syscall"
	"time"
	"unsafe"
)

// Scheduling of the stall thread (Linux).
const (
	schedFIFO   = 1  // SCHED_FIFO
	fifoPrio    = 10 // of 1…99: above every normal thread, below the kernel's own
	niceHighest = -20
)

// sharpenThread makes the calling OS thread (locked by the caller) wake
// on time while both cores are busy: SCHED_FIFO when the process may
// (root, CAP_SYS_NICE), else nice -20, else nothing. It returns what it
// got, for the report. Without it, a 200 ms stall measured up to 400 ms
// under the harness's own load.
func sharpenThread() string {
	param := struct{ priority int32 }{fifoPrio}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedFIFO, uintptr(unsafe.Pointer(&param))); errno == 0 {
		return "SCHED_FIFO"
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), niceHighest); err == nil {
		return "nice -20"
	}
	return "normal priority"
}

// sleepThread sleeps d in the kernel on the calling thread (no Go timer:
// the wake-up does not wait for the runtime's timer goroutine).
func sleepThread(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
