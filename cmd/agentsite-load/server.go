package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server process deadlines.
const (
	readyTimeout = 60 * time.Second // from start to GET /readyz 200
	stopTimeout  = 10 * time.Second // from SIGTERM to SIGKILL
)

// server is the agentsite process under test.
type server struct {
	cmd     *exec.Cmd
	baseURL string
	exited  chan struct{} // closed when the process has exited
	waitErr error         // valid once exited is closed
}

// startServer runs `agentsite serve` on a free loopback port against db and
// waits until it answers GET /readyz with 200.
func startServer(ctx context.Context, bin string, db *database, progress func(string, ...any)) (*server, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"serve",
		"--data-dir", db.dataDir,
		"--http-addr", addr,
		"--demo-agents=false",
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--log-level", "warn",
	}
	if db.url != "" {
		args = append(args, "--database-url", db.url)
	}
	cmd := exec.Command(bin, args...)
	// Only flags configure the server: drop AGENTSITE_* from the environment
	// so a developer's settings cannot leak into the measurement.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTSITE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childProcAttr()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, baseURL: "http://" + addr, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	progress("started agentsite (pid %d) on %s", cmd.Process.Pid, s.baseURL)
	if err := s.waitReady(ctx); err != nil {
		s.stop(progress)
		return nil, err
	}
	progress("server ready (%.1fs)", time.Since(start).Seconds())
	return s, nil
}

// freeLoopbackAddr asks the kernel for a free port on 127.0.0.1.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// waitReady polls /readyz until 200, the process exits, ctx ends, or the
// deadline passes.
func (s *server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.baseURL+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-s.exited:
			return fmt.Errorf("agentsite exited before it was ready: %v (its log is above)", s.waitErr)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("agentsite not ready after %s: last /readyz: %s", readyTimeout, last)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM, and SIGKILL if the process has not exited after
// stopTimeout. It is safe to call more than once.
func (s *server) stop(progress func(string, ...any)) {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		progress("server stopped")
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		progress("server did not stop within %s; killed", stopTimeout)
	}
}

// memory returns the server's resident set size and its peak, in bytes, from
// /proc/<pid>/status (zero where unavailable).
func (s *server) memory() (rss, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			peak = n << 10
		}
	}
	return rss, peak
}
