package procs

import "syscall"

// childProcAttr puts the child in its own process group, so a Ctrl-C in the
// terminal reaches only the parent (which then stops its children in
// order), and has the kernel kill the child if the parent dies without
// cleaning up.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
