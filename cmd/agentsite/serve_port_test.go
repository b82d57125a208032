package main

import (
	"io"
	"net"
	"os"
	"strings"
	"testing"
)

// TestServePortTakenLeavesNoKey: a node whose HTTP port is taken says so
// and leaves its data dir as it was: no new node.key (nor database) that
// a second try with another port would silently reuse or trip over.
func TestServePortTakenLeavesNoKey(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	m := NewMain()
	m.LogOutput = io.Discard
	if err := m.ParseFlags([]string{
		"--data-dir", dir,
		"--http-addr", taken.Addr().String(),
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0",
	}, func(string) string { return "" }, io.Discard); err != nil {
		t.Fatal(err)
	}
	err = m.Run(t.Context())
	_ = m.Close()
	if err == nil || !strings.Contains(err.Error(), "choose another --http-addr") {
		t.Fatalf("Run on a taken port = %v, want the listen error", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 0 {
		t.Errorf("the data dir holds %v after a failed start, want it empty", names)
	}
}
