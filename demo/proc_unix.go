//go:build unix

package demo

import (
	"os"
	"syscall"
)

type signal = syscall.Signal

// supported: the demo runs here.
const supported = true

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// sysProcAttr puts a node in a process group of its own: a Ctrl-C in the
// terminal reaches the demo only, which then stops the nodes itself, and
// a node's whole group can be signalled.
func sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(a)
	return a
}

// signalGroup signals the process group led by pid.
func signalGroup(pid int, sig signal) error {
	return syscall.Kill(-pid, sig)
}

// describeExit says how a process ended: "exit code N" or "killed by SIGX".
func describeExit(s *os.ProcessState) string {
	if s == nil {
		return "not started"
	}
	if ws, ok := s.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + signalName(ws.Signal())
	}
	return "exit code " + itoa(s.ExitCode())
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return s.String()
}
