package procs

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the child: with PROCS_TEST_CHILD set, TestMain
// runs the named behaviour instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PROCS_TEST_CHILD"); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// child is one behaviour of a child process; it returns the exit status.
func child(mode string) int {
	fmt.Println("child", mode, "PROCS_TEST_SECRET="+os.Getenv("PROCS_TEST_SECRET"), "PROCS_TEST_KEPT="+os.Getenv("PROCS_TEST_KEPT"))
	switch mode {
	case "crash":
		fmt.Println("boom")
		return 3
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
	case "parent": // starts a grandchild, says its pid, waits to be killed
		p, err := Start(Spec{Name: "grandchild", Binary: os.Args[0], Env: []string{"PROCS_TEST_CHILD=hang"}})
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Printf("grandchild pid %d\n", p.Pid())
		select {}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if addr := os.Getenv("PROCS_TEST_ADDR"); addr != "" && mode != "hang" {
		srv := &http.Server{Addr: addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
		go func() { _ = srv.ListenAndServe() }()
		defer srv.Close()
	}
	<-ctx.Done()
	fmt.Println("stopping on SIGTERM")
	return 0
}

// startChild starts this test binary in mode, logging to a temp file, and
// stops it when the test ends. It returns the process, its readiness URL
// and its log path.
func startChild(t *testing.T, mode string, env ...string) (*Process, string, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(t.TempDir(), mode+".log")
	p, err := Start(Spec{
		Name: "child-" + mode, Binary: os.Args[0], LogPath: logPath, DropEnv: []string{"PROCS_TEST_SECRET"},
		Env: append([]string{"PROCS_TEST_CHILD=" + mode, "PROCS_TEST_ADDR=" + addr}, env...),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.Exited()
	})
	return p, "http://" + addr + "/", logPath
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A child that answers is ready; SIGTERM stops it cleanly; its output is in
// its log; the environment is scrubbed of dropped prefixes and extended.
func TestStartReadyStop(t *testing.T) {
	t.Setenv("PROCS_TEST_SECRET", "from-the-shell")
	p, url, logPath := startChild(t, "serve", "PROCS_TEST_KEPT=given")
	if err := p.WaitReady(t.Context(), url, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("Stop = %v, want a clean stop", err)
	}
	if err := p.Err(); err != nil {
		t.Errorf("Err = %v, want exit status 0", err)
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("second Stop = %v", err)
	}
	log := readLog(t, logPath)
	for _, want := range []string{"PROCS_TEST_SECRET= ", "PROCS_TEST_KEPT=given", "stopping on SIGTERM"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// A child that dies while starting is reported with its status and log.
func TestExitBeforeReady(t *testing.T) {
	p, url, logPath := startChild(t, "crash")
	err := p.WaitReady(t.Context(), url, 60*time.Second)
	if err == nil || !strings.Contains(err.Error(), "child-crash exited before it was ready (exit status 3); see "+logPath) {
		t.Fatalf("WaitReady = %v", err)
	}
	if err := p.Stop(time.Second); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Stop after a crash = %v, want the exit status", err)
	}
	if !strings.Contains(readLog(t, logPath), "boom") {
		t.Error("the child's output is not in its log")
	}
	if err := p.Unexpected(); !strings.Contains(err.Error(), "child-crash exited unexpectedly (exit status 3); see "+logPath) {
		t.Errorf("Unexpected = %v", err)
	}
}

// A child that never answers runs out of time, and the error says what the
// last probe saw.
func TestNotReadyInTime(t *testing.T) {
	p, url, logPath := startChild(t, "hang")
	err := p.WaitReady(t.Context(), url, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "child-hang not ready after 300ms (last GET "+url+": ") ||
		!strings.HasSuffix(err.Error(), "see "+logPath) {
		t.Fatalf("WaitReady = %v", err)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("Stop = %v", err)
	}
}

// A child that ignores SIGTERM is killed after the grace period, and Stop
// says so.
func TestStopKillsAStubbornChild(t *testing.T) {
	p, url, _ := startChild(t, "stubborn")
	if err := p.WaitReady(t.Context(), url, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	err := p.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not stop within 200ms of SIGTERM, so it was killed") {
		t.Fatalf("Stop = %v", err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the process exited")
	}
}

func TestStartMissingBinary(t *testing.T) {
	_, err := Start(Spec{Name: "ghost", Binary: filepath.Join(t.TempDir(), "nope")})
	if err == nil || !strings.Contains(err.Error(), "ghost: start ") {
		t.Fatalf("Start = %v", err)
	}
	_, err = Start(Spec{Name: "ghost", Binary: os.Args[0], LogPath: filepath.Join(t.TempDir(), "no", "dir", "x.log")})
	if err == nil || !strings.Contains(err.Error(), "ghost: open its log") {
		t.Fatalf("Start with a bad log path = %v", err)
	}
}
