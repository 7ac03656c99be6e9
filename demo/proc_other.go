//go:build !unix

package demo

import (
	"errors"
	"os"
	"syscall"
)

type signal int

// supported: the demo does not run here.
const supported = false

const (
	sigTerm signal = 15
	sigKill signal = 9
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(int, signal) error {
	return errors.New("otopcua demo: process groups need a Unix system")
}

func describeExit(s *os.ProcessState) string {
	if s == nil {
		return "not started"
	}
	return "exit code " + itoa(s.ExitCode())
}
