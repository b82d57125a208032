package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataDirWritableByOthersIsRefused: the node will not start (nor
// keygen write a key) in a data dir other users can write, and says how to
// fix it; nothing is created there.
func TestDataDirWritableByOthersIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	m := NewMain()
	m.LogOutput = io.Discard
	if err := m.ParseFlags([]string{"--data-dir", dir, "--http-addr", "127.0.0.1:0", "--p2p-listen", "/ip4/127.0.0.1/tcp/0"},
		func(string) string { return "" }, io.Discard); err != nil {
		t.Fatal(err)
	}
	err := m.Run(t.Context())
	if err == nil {
		m.Close()
		t.Fatal("the node started in a world-writable data dir")
	}
	if want := "chmod 700 " + dir; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	var out bytes.Buffer
	err = run(t.Context(), []string{"keygen", "--data-dir", dir}, func(string) string { return "" }, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("keygen in a world-writable data dir: %v, want a refusal", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files were created in the refused data dir: %v", entries)
	}
}

// TestDataDirIsCreatedPrivate: a missing data dir is created 0700.
func TestDataDirIsCreatedPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh", "data")
	var out bytes.Buffer
	if err := run(t.Context(), []string{"keygen", "--data-dir", dir}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o700 {
		t.Errorf("data dir mode %#o, want 0700", m)
	}
}
