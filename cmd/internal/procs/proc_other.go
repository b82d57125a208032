//go:build !linux

package procs

import "syscall"

// childProcAttr has no special settings outside Linux.
func childProcAttr() *syscall.SysProcAttr { return nil }
