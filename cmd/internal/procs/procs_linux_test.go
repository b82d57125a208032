package procs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A child outlives no parent: when the parent is killed without a chance
// to stop it (SIGKILL), the kernel kills the child too, so no orphan node
// keeps its ports.
func TestChildDiesWithItsParent(t *testing.T) {
	out, err := os.Create(filepath.Join(t.TempDir(), "parent.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	said := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), "PROCS_TEST_CHILD=parent")
	parent.Stdout = out
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the parent never named its child:\n%s", said())
		}
		if _, rest, ok := strings.Cut(said(), "grandchild pid "); ok {
			_, _ = fmt.Sscanf(rest, "%d", &pid)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	if !running(pid) {
		t.Fatalf("grandchild %d is not running before its parent is killed", pid)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	for deadline = time.Now().Add(30 * time.Second); running(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = killPid(pid)
			t.Fatalf("grandchild %d still runs 30s after its parent was killed", pid)
		}
	}
}

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := bytes.Cut(b, []byte(") "))
	return len(rest) > 0 && rest[0] != 'Z' && rest[0] != 'X'
}

func killPid(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
