//go:build !linux

package main

import "syscall"

// childProcAttr has no special settings outside Linux.
func childProcAttr() *syscall.SysProcAttr { return nil }
