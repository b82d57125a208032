package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/mcpkit/mcppool"
)

// Tuning of the MCP clients.
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

// mcpClients are the mcp backend's clients: one initialized session per
// server URL and API key (the pool), dialled through the guarded client.
type mcpClients struct {
	pool  *mcppool.Pool[string, *mcpConn]
	httpc *http.Client // the guarded client behind mcpTransport
	ua    string
	log   *slog.Logger
}

// mcpConn is one pooled client and what it knows of the server's tools.
type mcpConn struct {
	client *client.Client

	toolsMu  sync.Mutex
	tools    map[string]mcp.Tool
	listedAt time.Time
	stale    atomic.Bool // the server said its list changed since
}

// Close ends the session.
func (c *mcpConn) Close() error { return c.client.Close() }

func newMCPClients(guarded *http.Client, opts RuntimeOptions) *mcpClients {
	httpc := &http.Client{
		Transport:     &mcpTransport{base: guarded.Transport, maxBody: int64(opts.MaxReplyBytes)*mcpBodyFactor + 64<<10},
		CheckRedirect: guarded.CheckRedirect,
		Timeout:       guarded.Timeout,
	}
	return &mcpClients{pool: mcppool.New[string, *mcpConn](mcpIdleTimeout), httpc: httpc, ua: opts.UserAgent, log: opts.Logger}
}

// poolKey identifies a client: URL and a digest of the key, so backends
// with different credentials never share a session.
func poolKey(b agent.Backend) string {
	sum := sha256.Sum256([]byte(b.APIKey))
	return b.URL + "\x00" + hex.EncodeToString(sum[:8])
}

// acquire returns an initialized client for b; call release when done,
// with broken true after a failure that may have left it unusable.
func (m *mcpClients) acquire(ctx context.Context, b agent.Backend) (*mcpConn, func(broken bool), error) {
	return m.pool.Acquire(ctx, poolKey(b), func(ctx context.Context) (*mcpConn, error) { return m.dial(ctx, b) })
}

// dial starts and initializes a client for b.
func (m *mcpClients) dial(ctx context.Context, b agent.Backend) (*mcpConn, error) {
	headers := map[string]string{}
	if b.APIKey != "" {
		headers["Authorization"] = "Bearer " + b.APIKey
	}
	return m.dialHeaders(ctx, b.URL, headers)
}

// dialHeaders starts and initializes a client for the server at url,
// sending headers (its credentials) on every request. The connection
// forgets its tools list when the server says the list changed.
func (m *mcpClients) dialHeaders(ctx context.Context, url string, headers map[string]string) (*mcpConn, error) {
	h := map[string]string{"User-Agent": m.ua}
	maps.Copy(h, headers)
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(m.httpc),
		transport.WithHTTPHeaders(h),
		transport.WithHTTPLogger(m.log))
	if err != nil {
		return nil, errBadBackendURL
	}
	c := client.NewClient(tr)
	conn := &mcpConn{client: c}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			conn.forgetTools()
		}
	})
	if err := c.Start(ctx); err != nil {
		c.Close()
		return nil, dialError(ctx, err)
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "agentsite", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, dialError(ctx, err)
	}
	return conn, nil
}

// dialError classifies a failed handshake with what the HTTP layer saw of
// it (the dialling turn's mcpCallState): turns waiting on the same dial
// get its error but not that state, and must reach the same verdict.
func dialError(ctx context.Context, err error) error {
	st, _ := ctx.Value(mcpStateKey{}).(*mcpCallState)
	if st == nil {
		st = &mcpCallState{}
	}
	return explainMCP(err, st)
}

// tool returns the definition of the named tool from tools/list, listing
// again if it is missing from a list older than mcpToolsTTL.
func (c *mcpConn) tool(ctx context.Context, name string) (mcp.Tool, bool, error) {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	if t, ok := c.tools[name]; ok {
		return t, true, nil
	}
	if c.tools != nil && time.Since(c.listedAt) < mcpToolsTTL && !c.stale.Load() {
		return mcp.Tool{}, false, nil
	}
	if err := c.listTools(ctx); err != nil {
		return mcp.Tool{}, false, err
	}
	t, ok := c.tools[name]
	return t, ok, nil
}

// hasTool lists the server's tools afresh, whatever is cached (a health
// probe asks the server, not our memory of it), and reports whether name
// is among them.
func (c *mcpConn) hasTool(ctx context.Context, name string) (bool, error) {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	if err := c.listTools(ctx); err != nil {
		return false, err
	}
	_, ok := c.tools[name]
	return ok, nil
}

// listTools runs tools/list (every page, up to mcpMaxToolPages) and keeps
// the answer; c.toolsMu must be held.
func (c *mcpConn) listTools(ctx context.Context) error {
	c.stale.Store(false) // a change heard from now on is after this list
	tools := map[string]mcp.Tool{}
	var req mcp.ListToolsRequest
	for range mcpMaxToolPages {
		res, err := c.client.ListToolsByPage(ctx, req)
		if err != nil {
			return err
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
	return nil
}

// forgetTools marks the cached tools list stale (the server said it
// changed). It never waits: it runs on the client's stream reader, which
// a tools/list holding toolsMu may be waiting on.
func (c *mcpConn) forgetTools() { c.stale.Store(true) }

// allTools returns the server's tools, sorted by name: the cached list
// while it is younger than ttl and the server has not said it changed,
// else a fresh tools/list.
func (c *mcpConn) allTools(ctx context.Context, ttl time.Duration) ([]mcp.Tool, error) {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	if c.tools == nil || time.Since(c.listedAt) >= ttl || c.stale.Load() {
		if err := c.listTools(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]mcp.Tool, 0, len(c.tools))
	for _, t := range c.tools {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
