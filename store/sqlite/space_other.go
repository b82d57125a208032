//go:build !linux && !darwin

package sqlite

// freeBytes cannot be told here: -1 (only SQLITE_FULL then counts as a
// full disk at start).
func freeBytes(string) int64 { return -1 }
