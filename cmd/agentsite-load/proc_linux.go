package main

import "syscall"

// childProcAttr puts the server in its own process group, so a Ctrl-C in the
// terminal reaches only this tool (which then stops the server in order), and
// has the kernel kill the server if this tool dies without cleaning up.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
