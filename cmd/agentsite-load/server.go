package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentsite/agentsite/cmd/internal/procs"
)

// Server process deadlines.
const (
	readyTimeout = 60 * time.Second // from start to GET /readyz 200
	stopTimeout  = 10 * time.Second // from SIGTERM to SIGKILL
)

// server is the agentsite process under test.
type server struct {
	proc    *procs.Process
	baseURL string
}

// startServer runs `agentsite serve` on a free loopback port against db and
// waits until it answers GET /readyz with 200. Its log goes to stderr.
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
	var env []string
	if db.url != "" {
		env = append(env, "AGENTSITE_DATABASE_URL="+db.url) // not in argv, where ps shows it
	}
	start := time.Now()
	// Only flags (and the URL above) configure the server: AGENTSITE_* is
	// dropped from the environment so a developer's settings cannot leak
	// into the measurement.
	p, err := procs.Start(procs.Spec{
		Name: "agentsite", Binary: bin, Args: args, Output: os.Stderr,
		DropEnv: []string{"AGENTSITE_"}, Env: env,
	})
	if err != nil {
		return nil, err
	}
	s := &server{proc: p, baseURL: "http://" + addr}
	progress("started agentsite (pid %d) on %s", p.Pid(), s.baseURL)
	if err := p.WaitReady(ctx, s.baseURL+"/readyz", readyTimeout); err != nil {
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

// stop stops the server (SIGTERM, SIGKILL after stopTimeout) and says how
// it ended.
func (s *server) stop(progress func(string, ...any)) {
	if err := s.proc.Stop(stopTimeout); err != nil {
		progress("warning: %v", err)
		return
	}
	progress("server stopped")
}

// memory returns the server's resident set size and its peak, in bytes, from
// /proc/<pid>/status (zero where unavailable).
func (s *server) memory() (rss, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.proc.Pid()))
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
