//go:build unix && !linux

package demo

import "syscall"

// setParentDeathSignal: only Linux has a parent-death signal.
func setParentDeathSignal(*syscall.SysProcAttr) {}
