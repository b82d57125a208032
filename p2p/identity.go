package p2p

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// LoadOrCreateKey reads the node's Ed25519 identity from path, creating it
// (mode 0600, in a 0700 directory) on first start. The same key means the
// same peer ID and the same agent ids after a restart.
func LoadOrCreateKey(path string) (key crypto.PrivKey, created bool, err error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, err := crypto.UnmarshalPrivateKey(b)
		if err != nil {
			return nil, false, fmt.Errorf("node key %s is corrupt (%w); restore it from a backup, or move it away to start as a new node", path, err)
		}
		if key.Type() != crypto.Ed25519 {
			return nil, false, fmt.Errorf("node key %s is %v, want Ed25519", path, key.Type())
		}
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return nil, false, fmt.Errorf("node key %s is readable by others and chmod 0600 failed: %w", path, err)
			}
		}
		return key, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("read node key: %w", err)
	}
	key, _, err = crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("generate node key: %w", err)
	}
	b, err = crypto.MarshalPrivateKey(key)
	if err != nil {
		return nil, false, fmt.Errorf("marshal node key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("create key directory: %w", err)
	}
	// Write to a temporary file and rename, so a crash never leaves a
	// half-written key behind.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, false, fmt.Errorf("write node key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, false, fmt.Errorf("save node key: %w", err)
	}
	return key, true, nil
}
