package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// ceilingBodies is how many of the run's answers the ceiling server
// replays.
const ceilingBodies = 2000

// runCeiling measures this machine's ceiling for the same requests: it
// records agentsite's answers to the first ceilingBodies queries, serves
// them from a bare net/http server on loopback (no routing, middleware,
// store or encoding: a map look-up and a write of the same bytes and
// headers; a query beyond those gets one of them by hash), and runs the
// same levels against it.
func runCeiling(ctx context.Context, baseURL string, cfg *config, progress func(string, ...any)) ([]row, error) {
	urls := targetURLs([]string{baseURL}, cfg)
	urls = urls[:min(len(urls), ceilingBodies)]
	progress("ceiling: recording %d answers of agentsite", len(urls))
	client := &http.Client{Transport: loopbackTransport(4, 1), Timeout: cfg.Timeout}
	defer client.CloseIdleConnections()
	bodies := make([][]byte, len(urls))
	byURI := make(map[string][]byte, len(urls))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, u := range urls {
		g.Go(func() error {
			req, err := http.NewRequestWithContext(gctx, http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return fmt.Errorf("ceiling: record %s: %w", u, err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
			if err != nil || resp.StatusCode != http.StatusOK {
				return fmt.Errorf("ceiling: record %s: %s %v", u, resp.Status, err)
			}
			bodies[i] = b
			mu.Lock()
			byURI[strings.TrimPrefix(u, baseURL)] = b
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("ceiling: listen: %w", err)
	}
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, ok := byURI[r.RequestURI]
			if !ok {
				h := fnv.New32a()
				_, _ = io.WriteString(h, r.RequestURI)
				b = bodies[h.Sum32()%uint32(len(bodies))]
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			_, _ = w.Write(b)
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			progress("ceiling: shutdown: %v", err)
		}
	}()
	progress("ceiling: bare net/http server on %s", ln.Addr())
	return attackAll(ctx, []string{"http://" + ln.Addr().String()}, cfg, &atomic.Uint64{}, nil, progress)
}
