package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// prepareDataDir creates the data dir (mode 0700) if it does not exist, and
// refuses one that other users may write to: it holds the node key and the
// SQLite database (backend API keys, session tokens), and whoever can write
// the directory can replace those files.
func prepareDataDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create data dir %s: %w", dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("data dir %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("--data-dir %s is not a directory", dir)
	case runtime.GOOS != "windows" && st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("data dir %s is writable by other users (mode %#o), and it holds the node key and the database; "+
			"fix it with: chmod 700 %s", dir, st.Mode().Perm(), dir)
	}
	return nil
}
