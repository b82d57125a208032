package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// Tuning of the MCP client cache.
const (
	// mcpIdleTimeout is how long an unused MCP session is kept.
	mcpIdleTimeout = 5 * time.Minute
	// mcpToolsTTL is how long a tools/list answer is trusted when a tool is
	// missing from it.
	mcpToolsTTL = time.Minute
	// mcpMaxToolPages bounds tools/list pagination.
	mcpMaxToolPages = 20
	// mcpBodyFactor bounds one MCP response relative to the reply limit
	// (JSON-RPC framing, escaping, other content blocks).
	mcpBodyFactor = 8
)

// errRuntimeClosed is returned by MCP calls after Runtime.Close.
var errRuntimeClosed = errors.New("agent runtime closed")

// mcpPool keeps one initialized MCP client per server URL (and API key),
// so a conversation does not pay the handshake on every message. Unused
// clients are closed after idle; Close closes all.
type mcpPool struct {
	httpc *http.Client // the guarded client behind mcpTransport
	ua    string
	log   *slog.Logger
	idle  time.Duration

	mu      sync.Mutex
	conns   map[string]*mcpConn
	closed  bool
	stop    chan struct{}
	janitor bool
	wg      sync.WaitGroup
}

// mcpConn is one cached client.
type mcpConn struct {
	key    string
	client *client.Client

	// guarded by mcpPool.mu
	users   int
	used    time.Time
	evicted bool

	toolsMu  sync.Mutex
	tools    map[string]mcp.Tool
	listedAt time.Time
}

func newMCPPool(guarded *http.Client, opts RuntimeOptions) *mcpPool {
	httpc := &http.Client{
		Transport:     &mcpTransport{base: guarded.Transport, maxBody: int64(opts.MaxReplyBytes)*mcpBodyFactor + 64<<10},
		CheckRedirect: guarded.CheckRedirect,
		Timeout:       guarded.Timeout,
	}
	return &mcpPool{httpc: httpc, ua: opts.UserAgent, log: opts.Logger, idle: mcpIdleTimeout, conns: map[string]*mcpConn{}, stop: make(chan struct{})}
}

// poolKey identifies a client: URL and a digest of the key, so backends
// with different credentials never share a session.
func poolKey(b agent.Backend) string {
	sum := sha256.Sum256([]byte(b.APIKey))
	return b.URL + "\x00" + hex.EncodeToString(sum[:8])
}

// acquire returns an initialized client for b; release it when done.
func (p *mcpPool) acquire(ctx context.Context, b agent.Backend) (*mcpConn, error) {
	key := poolKey(b)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errRuntimeClosed
	}
	if c := p.conns[key]; c != nil {
		c.users++
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()

	c, err := p.dial(ctx, b, key)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		go c.client.Close()
		return nil, errRuntimeClosed
	}
	if old := p.conns[key]; old != nil { // another turn got there first
		old.users++
		p.closeLocked(c)
		return old, nil
	}
	c.users = 1
	p.conns[key] = c
	if !p.janitor {
		p.janitor = true
		p.wg.Add(1)
		go p.sweep()
	}
	return c, nil
}

// release returns c; a broken client is dropped so the next turn starts a
// fresh session.
func (p *mcpPool) release(c *mcpConn, broken bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.users--
	c.used = time.Now()
	if broken && p.conns[c.key] == c {
		delete(p.conns, c.key)
		c.evicted = true
	}
	if c.evicted && c.users == 0 {
		p.closeLocked(c)
	}
}

// closeLocked closes c in the background (mcp-go sends a DELETE for the
// session); Close waits for it.
func (p *mcpPool) closeLocked(c *mcpConn) {
	if p.closed {
		return // Close closes everything itself
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		c.client.Close()
	}()
}

// sweep closes clients idle for longer than p.idle.
func (p *mcpPool) sweep() {
	defer p.wg.Done()
	t := time.NewTicker(p.idle / 2)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.mu.Lock()
			for k, c := range p.conns {
				if c.users == 0 && now.Sub(c.used) > p.idle {
					delete(p.conns, k)
					c.evicted = true
					p.closeLocked(c)
				}
			}
			p.mu.Unlock()
		}
	}
}

// close ends every session, in use or not.
func (p *mcpPool) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := p.conns
	p.conns = nil
	close(p.stop)
	p.mu.Unlock()
	for _, c := range conns {
		c.client.Close()
	}
	p.wg.Wait()
	return nil
}

// dial starts and initializes a client for b.
func (p *mcpPool) dial(ctx context.Context, b agent.Backend, key string) (*mcpConn, error) {
	headers := map[string]string{"User-Agent": p.ua}
	if b.APIKey != "" {
		headers["Authorization"] = "Bearer " + b.APIKey
	}
	tr, err := transport.NewStreamableHTTP(b.URL,
		transport.WithHTTPBasicClient(p.httpc),
		transport.WithHTTPHeaders(headers),
		transport.WithHTTPLogger(p.log))
	if err != nil {
		return nil, errBadBackendURL
	}
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "agentsite", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, err
	}
	return &mcpConn{key: key, client: c, used: time.Now()}, nil
}

// tool returns the definition of the named tool from tools/list, listing
// again if it is missing from a list older than mcpToolsTTL.
func (c *mcpConn) tool(ctx context.Context, name string) (mcp.Tool, bool, error) {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	if t, ok := c.tools[name]; ok {
		return t, true, nil
	}
	if c.tools != nil && time.Since(c.listedAt) < mcpToolsTTL {
		return mcp.Tool{}, false, nil
	}
	tools := map[string]mcp.Tool{}
	var req mcp.ListToolsRequest
	for range mcpMaxToolPages {
		res, err := c.client.ListToolsByPage(ctx, req)
		if err != nil {
			return mcp.Tool{}, false, err
		}
		for _, t := range res.Tools {
			tools[t.Name] = t
		}
		if res.NextCursor == "" || res.NextCursor == req.Params.Cursor {
			break
		}
		req.Params.Cursor = res.NextCursor
	}
	c.tools, c.listedAt = tools, time.Now()
	t, ok := tools[name]
	return t, ok, nil
}
