package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentsite/agentsite/store/sqlite"
)

const fullToken = "full-operator-token-0123456789"

// registerUntilFull registers agents with 4 KiB descriptions until the
// node answers 507 (the disk is full), and checks that answer: the code
// storage_full and a message that says what happened and what to do.
func registerUntilFull(t *testing.T, base string) {
	t.Helper()
	for i := range 200 {
		resp, _ := registerAgent(t, base, fmt.Sprintf("fill-bot-%d", i))
		body, _ := io.ReadAll(resp.Body)
		switch resp.StatusCode {
		case http.StatusCreated:
			continue
		case http.StatusInsufficientStorage:
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != "storage_full" ||
				!strings.Contains(e.Error.Message, "disk is full") || !strings.Contains(e.Error.Message, "reading still works") {
				t.Fatalf("507 body %s, want code storage_full and a message saying the disk is full and reads work", body)
			}
			return
		default:
			t.Fatalf("registration %d on a filling disk: %d %s, want 201 or 507", i, resp.StatusCode, body)
		}
	}
	t.Fatal("200 registrations and the disk is not full")
}

func registerAgent(t *testing.T, base, name string) (*http.Response, string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"display_name":"Fill","description":%q,"tags":["fill"],"backend":{"kind":"builtin","builtin":"echo"}}`,
		name, strings.Repeat("x", 4000))
	resp, _ := send(t, http.MethodPost, base+"/api/v1/agents", body, "Authorization", "Bearer "+fullToken, "Content-Type", "application/json")
	var a struct {
		ID string `json:"id"`
	}
	if resp.StatusCode == http.StatusCreated {
		_ = json.NewDecoder(resp.Body).Decode(&a)
	}
	return resp, a.ID
}

// wantReady checks /readyz: still ready (200), the store as want.
func wantReady(t *testing.T, base, want string) {
	t.Helper()
	resp, _ := send(t, http.MethodGet, base+"/readyz", "")
	var r struct {
		Ready  bool              `json:"ready"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !r.Ready || r.Checks["store"] != want {
		t.Fatalf("/readyz = %d %+v, want 200, ready, store %q", resp.StatusCode, r, want)
	}
	if want == "full" && !strings.Contains(r.Checks["store_detail"], "free space") {
		t.Errorf("/readyz store_detail %q does not say what to do", r.Checks["store_detail"])
	}
}

// wantReads checks that the catalogue is served: pages, the API, search.
func wantReads(t *testing.T, base, id string) {
	t.Helper()
	for _, path := range []string{"/", "/agents", "/agents?q=fill", "/agents/" + id, "/api/v1/agents?q=fill", "/api/v1/agents/" + id} {
		resp, _ := send(t, http.MethodGet, base+path, "")
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			t.Errorf("GET %s on a full disk: %d %.200s", path, resp.StatusCode, body)
		}
	}
}

// TestNodeStorageFull: a node whose database has no more room (SQLite's
// max_page_count reached: SQLITE_FULL, as on a full disk) answers a
// registration 507 storage_full with what to do, stays ready with
// /readyz saying the store is full, serves pages, the API and search, and
// takes writes again once there is room, without a restart (before: 500
// internal, and /readyz said ok).
func TestNodeStorageFull(t *testing.T) {
	m := startNode(t, t.TempDir(), "--operator-token", fullToken)
	defer m.Close()
	base := m.HTTPURL()
	resp, id := registerAgent(t, base, "before-full")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d", resp.StatusCode)
	}
	wantReady(t, base, "ok")
	db := m.Store.(*sqlite.DB)
	if err := db.SetMaxSize(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	registerUntilFull(t, base)
	wantReady(t, base, "full")
	wantReads(t, base, id)
	if err := db.SetMaxSize(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if resp, _ := registerAgent(t, base, "after-full"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("register once there is room: %d, want 201", resp.StatusCode)
	}
	wantReady(t, base, "ok")
}

// TestNodeRestartOnFullDisk fills a real (tmpfs) disk under a running
// node, then restarts the node on it: it starts and serves reads, writes
// get 507, in both ways a restart meets a full disk: with the database's
// log still there (the node filled the disk), and after a clean stop
// (SQLite cannot even create its shared-memory index: the database is
// opened read-only). Before, a restart on a full disk exited. It needs
// root to mount the tmpfs, as CI has; elsewhere it skips.
func TestNodeRestartOnFullDisk(t *testing.T) {
	disk := mountTmpfs(t, "8m")
	dir := filepath.Join(disk, "data")
	m := startNode(t, dir, "--operator-token", fullToken)
	base := m.HTTPURL()
	resp, id := registerAgent(t, base, "before-full")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d", resp.StatusCode)
	}
	filler := fillDisk(t, disk)
	registerUntilFull(t, base)
	wantReady(t, base, "full")
	wantReads(t, base, id)
	if err := m.Close(); err != nil {
		t.Logf("close on a full disk: %v", err)
	}

	// Restart with the log as the full disk left it: the database opens
	// for writing, the demo agents' writes fail.
	var log1 lockedBuffer
	m = startNodeLogging(t, dir, &log1, "--operator-token", fullToken)
	base = m.HTTPURL()
	wantReads(t, base, id)
	registerUntilFull(t, base)
	wantReady(t, base, "full")
	_ = m.Close()
	if !strings.Contains(log1.String(), "demo agents not published: the disk is full") {
		t.Errorf("first restart's log does not say the demo agents wait:\n%s", log1.String())
	}

	// Room again: a clean start and stop (the log is checkpointed and
	// removed), then the disk fills while the node is down.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	m = startNode(t, dir, "--operator-token", fullToken)
	if resp, _ := registerAgent(t, m.HTTPURL(), "with-room"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("register with room: %d", resp.StatusCode)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	fillDisk(t, disk)
	var log2 lockedBuffer
	m = startNodeLogging(t, dir, &log2, "--operator-token", fullToken)
	defer m.Close()
	base = m.HTTPURL()
	wantReads(t, base, id)
	registerUntilFull(t, base)
	wantReady(t, base, "full")
	if !strings.Contains(log2.String(), "the database is open read-only") || !strings.Contains(log2.String(), dir) {
		t.Errorf("second restart's log does not say the database is open read-only, naming %s:\n%s", dir, log2.String())
	}
}

// mountTmpfs mounts a tmpfs of size in a temporary directory, unmounted
// when t ends; it skips t where it cannot (not root, no mount).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (CI runs as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file on disk until no space is left, and returns it.
func fillDisk(t *testing.T, disk string) string {
	t.Helper()
	f, err := os.CreateTemp(disk, "filler-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill the disk: %v", err)
			}
			break
		}
	}
	// The last bytes, by the page.
	for _, err := f.Write(chunk[:4096]); err == nil; _, err = f.Write(chunk[:4096]) {
	}
	return f.Name()
}
