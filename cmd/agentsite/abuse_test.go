package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestAbuseOneAnonymousClient is one anonymous client doing what it can to
// a whole node from one IP: slow bodies, many sockets, many MCP sessions,
// a login burst. Throughout, /healthz keeps answering: every probe a 200
// within its client's 2 s timeout (how fast depends on the machine, so the
// latencies are only logged). Afterwards the node's goroutines and heap
// are back near where they started. Bounded: it runs in well under a
// minute.
func TestAbuseOneAnonymousClient(t *testing.T) {
	const perIP = 24
	m := NewMain()
	m.LogOutput = io.Discard
	if err := m.ParseFlags([]string{
		"--data-dir", t.TempDir(),
		"--http-addr", "127.0.0.1:0",
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--max-conns-per-ip", fmt.Sprint(perIP),
		"--body-timeout", "2s",
	}, func(string) string { return "" }, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	base := m.HTTPURL()
	host := strings.TrimPrefix(base, "http://")
	echo := findAgent(t, base, "echo")

	// Each phase's client closes its idle keep-alive connections when the
	// phase ends, as a real client's would time out.
	fresh := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	}
	warm := fresh()
	get(t, warm, base+"/chat/"+echo)
	warm.CloseIdleConnections()
	baseG, baseHeap := settle()

	health := startHealthProbe(t, base)

	t.Run("slow bodies", func(t *testing.T) {
		var conns []net.Conn
		for range perIP {
			c, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{", host)
		}
		for _, c := range conns { // closed by the node at its 2 s body deadline, not by ours
			_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
			_, err := io.Copy(io.Discard, c)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("a slow-body connection was still open after 15 s; the node's body deadline is 2 s")
			}
			_ = c.Close()
		}
	})

	t.Run("many sockets", func(t *testing.T) {
		c := fresh()
		defer c.CloseIdleConnections()
		get(t, c, base+"/chat/"+echo)
		d := websocket.Dialer{Jar: c.Jar, HandshakeTimeout: 5 * time.Second}
		var open []*websocket.Conn
		refused := 0
		for range 100 {
			ws, resp, err := d.Dial("ws://"+host+"/api/v1/chat", http.Header{"Origin": {base}})
			switch {
			case err == nil:
				open = append(open, ws)
			case resp != nil && resp.StatusCode == http.StatusTooManyRequests:
				refused++
			default:
				t.Fatalf("socket: %v", err)
			}
		}
		if len(open) > m.Config.MaxSocketsPerIP || refused == 0 {
			t.Errorf("%d sockets open, %d refused; at most %d may be open", len(open), refused, m.Config.MaxSocketsPerIP)
		}
		for _, ws := range open {
			_ = ws.Close()
		}
	})

	t.Run("many MCP sessions", func(t *testing.T) {
		burst(t, fresh(), 300, func(i int) *http.Request {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"abuse","version":"1"}}}`, i)
			req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			return req
		})
	})

	t.Run("login burst", func(t *testing.T) {
		form := url.Values{"handle": {"nobody-here"}, "password": {"wrong password"}}.Encode()
		burst(t, fresh(), 60, func(int) *http.Request {
			req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", base) // as a browser's form
			return req
		})
	})

	lat := health.stop()
	slices.Sort(lat)
	p95 := lat[len(lat)*95/100]
	t.Logf("/healthz during the attack: %d probes, p50 %s, p95 %s, max %s", len(lat), lat[len(lat)/2], p95, lat[len(lat)-1])

	// Back to baseline: what the attack started has ended.
	deadline := time.Now().Add(20 * time.Second)
	for {
		g, heap := settle()
		if g <= baseG+20 && heap <= baseHeap+32<<20 {
			t.Logf("goroutines %d (baseline %d), heap %d MiB (baseline %d MiB)", g, baseG, heap>>20, baseHeap>>20)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the attack: %d goroutines (baseline %d), heap %d MiB (baseline %d MiB)", g, baseG, heap>>20, baseHeap>>20)
		}
	}
}

// burst sends n requests one after another and wants some refused with
// 429: the client's budget ran out.
func burst(t *testing.T, c *http.Client, n int, request func(i int) *http.Request) {
	t.Helper()
	defer c.CloseIdleConnections()
	codes := map[int]int{}
	for i := range n {
		resp, err := c.Do(request(i))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("%d requests from one client were never limited: %v", n, codes)
	}
}

// healthProbe GETs /healthz every 20 ms on its own connection and records
// each latency; a probe that gets no 200 within 2 s fails the test.
type healthProbe struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	lat  []time.Duration
}

func startHealthProbe(t *testing.T, base string) *healthProbe {
	p := &healthProbe{done: make(chan struct{})}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer client.CloseIdleConnections()
		for {
			select {
			case <-p.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			start := time.Now()
			resp, err := client.Get(base + "/healthz")
			if err != nil {
				t.Errorf("/healthz during the attack: %v", err)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("/healthz during the attack: %d", resp.StatusCode)
			}
			p.mu.Lock()
			p.lat = append(p.lat, time.Since(start))
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *healthProbe) stop() []time.Duration {
	close(p.done)
	p.wg.Wait()
	return p.lat
}

// settle lets finished goroutines exit and collects garbage, then returns
// the goroutine count and the live heap.
func settle() (goroutines int, heap uint64) {
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

func get(t *testing.T, c *http.Client, u string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
}

// findAgent returns the id of the local agent named name.
func findAgent(t *testing.T, base, name string) string {
	t.Helper()
	var list agentList
	getJSON(t, base+"/api/v1/agents?q="+name, &list)
	for _, a := range list.Agents {
		if a.Name == name {
			return a.ID
		}
	}
	t.Fatalf("no agent %q on the node", name)
	return ""
}
