//go:build linux || darwin

package sqlite

import "syscall"

// freeBytes is the space left to unprivileged writers on dir's file
// system, or -1 when it cannot be told.
func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize))
}
