package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// fileMode is the mode of the database and its -wal, -shm and -journal
// files: they hold backend API keys and session tokens, so only the node's
// user may read them.
const fileMode = 0o600

// secureFiles creates the database file with fileMode if it does not exist
// (SQLite's own default is 0644 less the umask) and tightens an existing
// database and its companion files that others may read. SQLite creates
// the -wal, -shm and -journal files with the database file's mode, so
// creating that one right is enough for the rest.
func secureFiles(path string, logger *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sqlite: check the mode of %s: %w", p, err)
		}
		was := st.Mode().Perm()
		if was&^fileMode == 0 {
			continue
		}
		if err := os.Chmod(p, fileMode); err != nil {
			return fmt.Errorf("sqlite: %s has mode %#o, readable by other users, and chmod %#o failed (fix it by hand): %w", p, was, fileMode, err)
		}
		logger.Warn("sqlite: database file was open to other users; its mode is now 0600", "file", p, "was", fmt.Sprintf("%#o", was))
	}
	return nil
}
