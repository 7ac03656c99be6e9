package demo

import "syscall"

// setParentDeathSignal makes the kernel SIGKILL a node if the demo itself
// dies without stopping it (killed with SIGKILL, crashed).
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
