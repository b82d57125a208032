package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentsite/agentsite/cmd/internal/procs"
)

// Server process deadlines.
const (
	readyTimeout = 3 * time.Minute  // from start to GET /readyz 200
	indexTimeout = 10 * time.Minute // from then to the search index loaded (1M listings)
	stopTimeout  = 10 * time.Second // from SIGTERM to SIGKILL
)

// maxReplicas bounds --replicas.
const maxReplicas = 8

// server is an agentsite process under test.
type server struct {
	proc    *procs.Process
	baseURL string
	name    string // "agentsite", or "replica 2" of a portal of several
}

// startServers starts the n agentsite processes of the run: the first on
// db's data dir (the seeded one; for SQLite, the store itself), each further
// one as a portal replica on the same database with a data dir (and so a
// key) of its own under tmp. On error it stops the ones already started.
func startServers(ctx context.Context, bin string, db *database, n int, tmp string, progress func(string, ...any)) ([]*server, error) {
	var srvs []*server
	for i := range n {
		dataDir, name := db.dataDir, "agentsite"
		if n > 1 {
			name = fmt.Sprintf("replica %d", i+1)
		}
		if i > 0 {
			dataDir = filepath.Join(tmp, fmt.Sprintf("data-replica-%d", i+1))
			if err := os.MkdirAll(dataDir, 0o700); err != nil {
				stopServers(srvs, progress)
				return nil, err
			}
		}
		s, err := startServer(ctx, bin, db, dataDir, name, progress)
		if err != nil {
			stopServers(srvs, progress)
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		srvs = append(srvs, s)
	}
	return srvs, nil
}

// stopServers stops every server, the last started first.
func stopServers(srvs []*server, progress func(string, ...any)) {
	for i := len(srvs) - 1; i >= 0; i-- {
		srvs[i].stop(progress)
	}
}

// baseURLs are the servers' base URLs, in start order.
func baseURLs(srvs []*server) []string {
	out := make([]string, len(srvs))
	for i, s := range srvs {
		out[i] = s.baseURL
	}
	return out
}

// startServer runs `agentsite serve` on a free loopback port against db with
// data dir dataDir and waits until it answers GET /readyz with 200. Its log
// goes to stderr.
func startServer(ctx context.Context, bin string, db *database, dataDir, name string, progress func(string, ...any)) (*server, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"serve",
		"--data-dir", dataDir,
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
	s := &server{proc: p, baseURL: "http://" + addr, name: name}
	progress("started %s (pid %d) on %s", name, p.Pid(), s.baseURL)
	if err := p.WaitReady(ctx, s.baseURL+"/readyz", readyTimeout); err != nil {
		s.stop(progress)
		return nil, err
	}
	if err := waitSearchIndex(ctx, s.baseURL, indexTimeout); err != nil {
		s.stop(progress)
		return nil, err
	}
	progress("%s ready, search index loaded (%.1fs from start)", name, time.Since(start).Seconds())
	if m := s.metrics(ctx, "agentsite_search_index_load_seconds", "agentsite_search_index_listings"); len(m) == 2 {
		rss, _ := s.memory()
		progress("%s: search index of %.0f listings loaded in %.2fs; RSS after the load %.1f MiB",
			name, m["agentsite_search_index_listings"], m["agentsite_search_index_load_seconds"], float64(rss)/(1<<20))
	}
	return s, nil
}

// waitSearchIndex waits until the server's /readyz no longer says its
// search index is loading, so the run measures the node as it serves
// once started, not its first seconds.
func waitSearchIndex(ctx context.Context, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		var ready struct {
			Checks map[string]string `json:"checks"`
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&ready)
			resp.Body.Close()
		}
		// Loaded, or no index; "loading" and "retrying" mean searches
		// still go to the database.
		if st := ready.Checks["search_index"]; err == nil && (st == "ok" || st == "") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: search index still loading after %v (last error: %v)", base, timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// metrics reads the named unlabelled series from the server's /metrics
// (those it does not find are left out).
func (s *server) metrics(ctx context.Context, names ...string) map[string]float64 {
	out := map[string]float64{}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.baseURL+"/metrics", nil)
	if err != nil {
		return out
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		for _, n := range names {
			if name == n {
				if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
					out[n] = v
				}
			}
		}
	}
	return out
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
		progress("warning: %s: %v", s.name, err)
		return
	}
	progress("%s stopped", s.name)
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
