package p2p

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// Errors of SendTurn beyond the agent.Err* kinds a host can report.
var (
	// ErrHostUnreachable: the node hosting the agent could not be reached,
	// or the connection broke during the turn.
	ErrHostUnreachable = errors.New("agent host unreachable")
	// ErrRemoteBusy: the host refused the turn because this node sent it
	// too many.
	ErrRemoteBusy = errors.New("agent host busy")
	// ErrRemoteFailed: the host answered, but with an error this node does
	// not know or a protocol error.
	ErrRemoteFailed = errors.New("agent host failed the turn")
)

// MCP over libp2p timings.
const (
	mcpConnectTimeout = 5 * time.Second
	// mcpTurnTimeout is above the runtime's own 60 s limit, so a slow
	// backend's timeout error from the host arrives before ours.
	mcpTurnTimeout = 70 * time.Second
	mcpClientIdle  = 5 * time.Minute
	maxTurnHistory = 100 // what a host accepts (handlers.maxMCPHistory)
	// maxHistoryBytes keeps a turn under a host's 1 MiB body limit
	// (handlers.maxPeerMCPBodyBytes) with room for the JSON around it.
	maxHistoryBytes = 768 << 10
)

// mcpState is a node's MCP-over-libp2p side: go-libp2p's HTTP-over-streams
// host (server and client), and one initialized MCP client per host peer.
type mcpState struct {
	mu      sync.Mutex
	http    *libp2phttp.Host
	serving bool
	clients map[peer.ID]*mcpConn
	tokens  atomic.Uint64
}

// mcpConn is a cached MCP client for one host. The host's MCP server is
// stateless, so a client survives reconnections; it is dropped after a
// transport error and when idle.
type mcpConn struct {
	ready    chan struct{} // closed once c or err is set
	c        *client.Client
	err      error
	lastUsed time.Time // under mcpState.mu
	inflight int       // under mcpState.mu
	sinks    sync.Map  // progress token → *progressSink
}

// ServeMCP serves h (the node's peer MCP handler) to other nodes on
// agent.MCPProtocol with go-libp2p's HTTP over streams, until the node
// closes.
func (n *Node) ServeMCP(h http.Handler) error {
	hh := n.mcpHTTP()
	n.mcp.mu.Lock()
	if n.mcp.serving {
		n.mcp.mu.Unlock()
		return errors.New("p2p: MCP is already being served")
	}
	n.mcp.serving = true
	n.mcp.mu.Unlock()
	if n.ctx.Err() != nil {
		return errors.New("p2p: the node is closed")
	}
	hh.SetHTTPHandler(agent.MCPProtocol, h)
	n.goLoop(func(ctx context.Context) {
		errc := make(chan error, 1)
		go func() { errc <- hh.Serve() }()
		select {
		case <-ctx.Done():
			_ = hh.Close()
			<-errc
		case err := <-errc:
			n.logger.Error("MCP over libp2p stopped serving", "err", err)
			<-ctx.Done()
		}
		n.closeMCPClients()
	})
	return nil
}

// mcpHTTP returns the node's libp2phttp host, made on first use.
func (n *Node) mcpHTTP() *libp2phttp.Host {
	n.mcp.mu.Lock()
	defer n.mcp.mu.Unlock()
	if n.mcp.http == nil {
		h := &libp2phttp.Host{StreamHost: n.host}
		// Makes the peer-metadata cache now: libp2phttp creates it lazily
		// without a lock, which races once clients are concurrent.
		h.SetPeerMetadata(n.host.ID(), libp2phttp.PeerMeta{})
		n.mcp.http = h
	}
	return n.mcp.http
}

// SendTurn sends a chat turn to the agent's hosting node over MCP on
// libp2p (send_message with a progress token), calls emit with each chunk
// of the reply in order as it streams, and returns the whole reply. Errors
// wrap ErrHostUnreachable (cannot reach the host), context.DeadlineExceeded
// (no reply in time), the agent.Err* kind the host reported, ErrRemoteBusy
// or ErrRemoteFailed; an error from emit is returned as is.
func (n *Node) SendTurn(ctx context.Context, hostPeerID string, t agent.Turn, emit func(string) error) (string, error) {
	pid, err := peer.Decode(hostPeerID)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a peer id", ErrHostUnreachable, hostPeerID)
	}
	if pid == n.host.ID() {
		return "", fmt.Errorf("%w: the agent is hosted by this node", ErrHostUnreachable)
	}
	if err := n.connectHost(ctx, pid); err != nil {
		return "", err
	}
	conn, err := n.mcpConnFor(ctx, pid)
	if err != nil {
		return "", err
	}
	defer n.releaseMCPConn(conn)

	tctx, cancel := context.WithTimeout(ctx, mcpTurnTimeout)
	defer cancel()
	token := "t" + strconv.FormatUint(n.mcp.tokens.Add(1), 10)
	sink := &progressSink{emit: emit, cancel: cancel}
	conn.sinks.Store(token, sink)
	defer conn.sinks.Delete(token)

	var req mcp.CallToolRequest
	req.Params.Name = "send_message"
	req.Params.Arguments = turnArguments(t)
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	res, err := conn.c.CallTool(tctx, req)
	if serr := sink.finish(); serr != nil {
		return "", serr
	}
	if err != nil {
		var te *transport.Error
		switch {
		case ctx.Err() != nil:
			return "", ctx.Err()
		case errors.Is(tctx.Err(), context.DeadlineExceeded):
			return "", fmt.Errorf("agent host %s: no reply within %s: %w", pid.ShortString(), mcpTurnTimeout, context.DeadlineExceeded)
		case errors.As(err, &te):
			n.dropMCPConn(pid, conn)
			return "", fmt.Errorf("%w: %s: %v", ErrHostUnreachable, pid.ShortString(), err)
		}
		n.dropMCPConn(pid, conn)
		return "", fmt.Errorf("%w: %s: %v", ErrRemoteFailed, pid.ShortString(), err)
	}
	if res.IsError {
		return "", remoteError(res)
	}
	reply := resultText(res)
	// The host's MCP library may drop the last progress notifications of a
	// fast reply; the result has the whole text, so the rest goes out now.
	if rest, ok := strings.CutPrefix(reply, sink.text.String()); ok && rest != "" && emit != nil {
		if err := emit(rest); err != nil {
			return "", err
		}
	}
	return reply, nil
}

// turnArguments is send_message's input for a host: the turn and the
// latest earlier messages, at most maxTurnHistory of them and
// maxHistoryBytes of text.
func turnArguments(t agent.Turn) map[string]any {
	hist := t.History
	if len(hist) > maxTurnHistory {
		hist = hist[len(hist)-maxTurnHistory:]
	}
	for size, i := 0, len(hist)-1; i >= 0; i-- {
		if size += len(hist[i].Text); size > maxHistoryBytes {
			hist = hist[i+1:]
			break
		}
	}
	h := make([]map[string]string, 0, len(hist))
	for _, m := range hist {
		h = append(h, map[string]string{"role": m.Role, "text": m.Text})
	}
	return map[string]any{"agent_id": t.AgentID, "text": t.Text, "conversation_id": t.ConversationID, "history": h, "owner": t.Owner}
}

// connectHost makes sure there is a connection to the host, dialling the
// addresses in the peerstore or, without any, those the DHT finds, for at
// most mcpConnectTimeout.
func (n *Node) connectHost(ctx context.Context, pid peer.ID) error {
	if n.host.Network().Connectedness(pid) == network.Connected {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	info := peer.AddrInfo{ID: pid, Addrs: n.host.Peerstore().Addrs(pid)}
	if len(info.Addrs) == 0 && n.dht != nil {
		if found, err := n.dht.FindPeer(cctx, pid); err == nil {
			info = found
		}
	}
	if err := n.host.Connect(cctx, info); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: %v", ErrHostUnreachable, pid.ShortString(), err)
	}
	return nil
}

// mcpConnFor returns the cached client for pid, making and initializing
// one if needed (once, however many turns ask at the same time).
func (n *Node) mcpConnFor(ctx context.Context, pid peer.ID) (*mcpConn, error) {
	now := time.Now()
	n.mcp.mu.Lock()
	var idle []*mcpConn
	for id, c := range n.mcp.clients {
		if c.inflight == 0 && now.Sub(c.lastUsed) > mcpClientIdle {
			idle = append(idle, c)
			delete(n.mcp.clients, id)
		}
	}
	if n.mcp.clients == nil {
		n.mcp.clients = map[peer.ID]*mcpConn{}
	}
	conn, ok := n.mcp.clients[pid]
	if !ok {
		conn = &mcpConn{ready: make(chan struct{})}
		n.mcp.clients[pid] = conn
	}
	conn.lastUsed = now
	conn.inflight++
	n.mcp.mu.Unlock()
	closeConns(idle)

	if !ok {
		conn.c, conn.err = n.dialMCP(ctx, pid, conn)
		close(conn.ready)
	}
	select {
	case <-conn.ready:
	case <-ctx.Done():
		n.releaseMCPConn(conn)
		return nil, ctx.Err()
	}
	if conn.err != nil {
		n.releaseMCPConn(conn)
		n.dropMCPConn(pid, conn)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, conn.err
	}
	return conn, nil
}

// dialMCP makes an MCP client that speaks to pid over libp2p streams.
func (n *Node) dialMCP(ctx context.Context, pid peer.ID, conn *mcpConn) (*client.Client, error) {
	fail := func(err error) (*client.Client, error) {
		return nil, fmt.Errorf("%w: %s: MCP: %v", ErrHostUnreachable, pid.ShortString(), err)
	}
	hh := n.mcpHTTP()
	if _, ok := hh.GetPeerMetadata(pid); !ok {
		// Every node serves MCP where ServeMCP puts it; knowing that saves
		// the well-known look-up (a round trip with libp2phttp's own 30 s
		// timeout). A node that does not serve it fails Initialize below.
		hh.SetPeerMetadata(pid, libp2phttp.PeerMeta{agent.MCPProtocol: {Path: agent.MCPProtocol + "/"}})
	}
	hc, err := hh.NamespacedClient(agent.MCPProtocol, peer.AddrInfo{ID: pid})
	if err != nil {
		return fail(err)
	}
	tr, err := transport.NewStreamableHTTP("http://"+pid.String()+"/",
		transport.WithHTTPBasicClient(&hc),
		transport.WithHTTPLogger(n.logger))
	if err != nil {
		return fail(err)
	}
	c := client.NewClient(tr)
	ictx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	if err := c.Start(ictx); err != nil {
		return fail(err)
	}
	c.OnNotification(conn.onNotification)
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "agentsite", Version: n.cfg.Version}
	if _, err := c.Initialize(ictx, init); err != nil {
		_ = c.Close()
		return fail(err)
	}
	return c, nil
}

// onNotification hands a progress notification to the turn it belongs to.
func (c *mcpConn) onNotification(nt mcp.JSONRPCNotification) {
	if nt.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	f := nt.Params.AdditionalFields
	token, _ := f["progressToken"].(string)
	msg, _ := f["message"].(string)
	progress, _ := f["progress"].(float64)
	if s, ok := c.sinks.Load(token); ok {
		s.(*progressSink).chunk(progress, msg)
	}
}

func (n *Node) releaseMCPConn(c *mcpConn) {
	n.mcp.mu.Lock()
	c.inflight--
	c.lastUsed = time.Now()
	n.mcp.mu.Unlock()
}

// dropMCPConn forgets a client after a failure; the next turn makes a new
// one. (The host's server is stateless: there is nothing to end there.)
func (n *Node) dropMCPConn(pid peer.ID, c *mcpConn) {
	n.mcp.mu.Lock()
	if n.mcp.clients[pid] == c {
		delete(n.mcp.clients, pid)
	}
	n.mcp.mu.Unlock()
}

// closeMCPClients closes every cached client (node shutdown): turns in
// flight end with an error.
func (n *Node) closeMCPClients() {
	n.mcp.mu.Lock()
	all := make([]*mcpConn, 0, len(n.mcp.clients))
	for _, c := range n.mcp.clients {
		all = append(all, c)
	}
	n.mcp.clients = nil
	n.mcp.mu.Unlock()
	closeConns(all)
}

func closeConns(cs []*mcpConn) {
	for _, c := range cs {
		select {
		case <-c.ready:
			if c.c != nil {
				_ = c.c.Close()
			}
		default: // still initializing; its maker gives up on its own
		}
	}
}

// progressSink passes one turn's chunks to its emit, in order, once each,
// and never after the turn returned.
type progressSink struct {
	mu     sync.Mutex
	emit   func(string) error
	cancel context.CancelFunc
	last   float64
	text   strings.Builder // what was emitted
	err    error
	done   bool
}

func (s *progressSink) chunk(progress float64, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.err != nil || progress <= s.last || text == "" {
		return
	}
	s.last = progress
	if s.emit == nil {
		return
	}
	if err := s.emit(text); err != nil {
		s.err = err
		s.cancel()
		return
	}
	s.text.WriteString(text)
}

// finish stops further chunks and returns emit's error, if any.
func (s *progressSink) finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	return s.err
}
