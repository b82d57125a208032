package p2p

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/agentsite/agentsite/agent"
)

// mcpConnectTimeout bounds finding and dialling an agent's host.
const mcpConnectTimeout = 5 * time.Second

// mcpState is a node's MCP-over-libp2p side: go-libp2p's HTTP-over-streams
// host, which serves the node's peer MCP handler and carries its calls to
// other nodes' (p2p/peermcp speaks MCP on both ends).
type mcpState struct {
	mu      sync.Mutex
	http    *libp2phttp.Host
	serving bool
}

// ServeMCP serves h (p2p/peermcp's handler) to other nodes on
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
	})
	return nil
}

// ServeMCPLines answers other nodes' streams on agent.MCPLinesProtocol
// with serve (p2p/peermcp's LinesHandler.ServeStream): a caller's
// send_message calls on one long-lived stream, the caller as "peer:<id>",
// ctx ending with the node. The resource manager bounds the streams a peer
// may hold open.
func (n *Node) ServeMCPLines(serve func(ctx context.Context, caller string, s network.Stream)) {
	n.host.SetStreamHandler(agent.MCPLinesProtocol, func(s network.Stream) {
		serve(n.ctx, "peer:"+s.Conn().RemotePeer().String(), s)
	})
}

// SpeaksMCPLines reports whether the node hostPeerID serves
// agent.MCPLinesProtocol, as identify told this node.
func (n *Node) SpeaksMCPLines(hostPeerID string) bool {
	pid, err := n.hostID(hostPeerID)
	if err != nil {
		return false
	}
	ok, _ := n.host.Peerstore().SupportsProtocols(pid, agent.MCPLinesProtocol)
	return len(ok) > 0
}

// OpenMCPLines opens a stream to the node hostPeerID on
// agent.MCPLinesProtocol, over a relayed connection too. Errors wrap
// agent.ErrHostUnreachable, or are ctx's.
func (n *Node) OpenMCPLines(ctx context.Context, hostPeerID string) (network.Stream, error) {
	pid, err := n.hostID(hostPeerID)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, libp2phttp.DefaultNewStreamTimeout)
	defer cancel()
	s, err := limitedOK{Host: n.host, n: n}.NewStream(sctx, pid, agent.MCPLinesProtocol)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s: %v", agent.ErrHostUnreachable, pid.ShortString(), err)
	}
	return s, nil
}

// mcpHTTP returns the node's libp2phttp host, made on first use.
func (n *Node) mcpHTTP() *libp2phttp.Host {
	n.mcp.mu.Lock()
	defer n.mcp.mu.Unlock()
	if n.mcp.http == nil {
		h := &libp2phttp.Host{StreamHost: limitedOK{Host: n.host, n: n}}
		// Makes the peer-metadata cache now: libp2phttp creates it lazily
		// without a lock, which races once clients are concurrent.
		h.SetPeerMetadata(n.host.ID(), libp2phttp.PeerMeta{})
		n.mcp.http = h
	}
	return n.mcp.http
}

// ConnectHost makes sure there is a connection to the node hostPeerID
// that hosts an agent, dialling the addresses in the peerstore or, without
// any, those the DHT finds, for at most 5 s. Errors wrap
// agent.ErrHostUnreachable, or are ctx's.
func (n *Node) ConnectHost(ctx context.Context, hostPeerID string) error {
	pid, err := n.hostID(hostPeerID)
	if err != nil {
		return err
	}
	if c := n.host.Network().Connectedness(pid); c == network.Connected || c == network.Limited {
		return nil
	}
	// A relayed connection is enough: turns may use it (limitedOK) until
	// hole punching gives a direct one.
	cctx, cancel := context.WithTimeout(network.WithAllowLimitedConn(ctx, "agentsite MCP turn"), mcpConnectTimeout)
	defer cancel()
	info := peer.AddrInfo{ID: pid, Addrs: n.host.Peerstore().Addrs(pid)}
	// The DHT knows the host's current addresses, relay addresses of a
	// node behind NAT included (the ones in the peerstore may be stale or
	// private); ask it for at most 2 s and dial everything at once.
	if n.dht != nil {
		fctx, fcancel := context.WithTimeout(cctx, 2*time.Second)
		if found, err := n.dht.FindPeer(fctx, pid); err == nil {
			info.Addrs = append(info.Addrs, found.Addrs...)
		}
		fcancel()
	}
	// A host behind NAT is reachable through the relay it holds a slot
	// on; when neither the peerstore nor the DHT has its relay address
	// yet (identify push still on its way), try the circuits through the
	// relays this node is connected to: a relay that holds no slot for
	// the host refuses at once.
	if !slices.ContainsFunc(info.Addrs, isRelayed) {
		info.Addrs = append(info.Addrs, n.circuitsVia(pid, 4)...)
	}
	if err := n.host.Connect(cctx, info); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: %v", agent.ErrHostUnreachable, pid.ShortString(), err)
	}
	return nil
}

// MCPClient returns an HTTP client whose requests reach the MCP handler
// the node hostPeerID serves (ServeMCP), over libp2p streams; it works
// across reconnections. Errors wrap agent.ErrHostUnreachable.
func (n *Node) MCPClient(hostPeerID string) (*http.Client, error) {
	pid, err := n.hostID(hostPeerID)
	if err != nil {
		return nil, err
	}
	hh := n.mcpHTTP()
	if _, ok := hh.GetPeerMetadata(pid); !ok {
		// Every node serves MCP where ServeMCP puts it; knowing that saves
		// the well-known look-up (a round trip with libp2phttp's own 30 s
		// timeout). A node that does not serve it fails MCP's initialize.
		hh.SetPeerMetadata(pid, libp2phttp.PeerMeta{agent.MCPProtocol: {Path: agent.MCPProtocol + "/"}})
	}
	rt, err := hh.NamespaceRoundTripper(resettingRoundTripper{h: limitedOK{Host: n.host, n: n}, server: pid}, agent.MCPProtocol, pid)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", agent.ErrHostUnreachable, pid.ShortString(), err)
	}
	return &http.Client{Transport: rt}, nil
}

// resettingRoundTripper is libp2phttp's HTTP/1.1 over one libp2p stream
// per request, with one change: a request whose context ends before its
// response is read resets the stream. The serving node's listener ignores
// a plain EOF (libp2phttp listens with IgnoreEOF), so a closed stream goes
// unnoticed there; a reset ends the handler's request context, so a caller
// that gives up (AgentChat's Stop) stops the turn at the host too.
type resettingRoundTripper struct {
	h      host.Host
	server peer.ID
}

// RoundTrip implements http.RoundTripper.
func (rt resettingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	sctx, cancel := context.WithTimeout(ctx, libp2phttp.DefaultNewStreamTimeout)
	defer cancel()
	s, err := rt.h.NewStream(sctx, rt.server, libp2phttp.ProtocolIDForMultistreamSelect)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	r.Header.Set("Connection", "close") // one request per stream
	// The write side stays open (libp2phttp closes it): the server's
	// http.Server then keeps a read pending on the stream, which is what
	// sees the reset; after an EOF it would not read again.
	go func() {
		_ = r.Write(s)
		if r.Body != nil {
			_ = r.Body.Close()
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(s), r)
	if err != nil {
		stop()
		_ = s.Reset()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	resp.Body = &resettingBody{ReadCloser: resp.Body, ctx: ctx, s: s, stop: stop}
	return resp, nil
}

// resettingBody is a response body on stream s: closing it closes the
// stream, or resets it if the request's context has ended (the reader may
// close the body as the context ends, before the reset above runs).
type resettingBody struct {
	io.ReadCloser
	ctx  context.Context
	s    network.Stream
	stop func() bool
}

func (b *resettingBody) Close() error {
	b.stop()
	if b.ctx.Err() != nil {
		_ = b.s.Reset()
	} else {
		_ = b.s.Close()
	}
	return b.ReadCloser.Close()
}

// hostID decodes the peer ID of an agent's host, which must be another
// node.
func (n *Node) hostID(hostPeerID string) (peer.ID, error) {
	pid, err := peer.Decode(hostPeerID)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a peer id", agent.ErrHostUnreachable, hostPeerID)
	}
	if pid == n.host.ID() {
		return "", fmt.Errorf("%w: the agent is hosted by this node", agent.ErrHostUnreachable)
	}
	return pid, nil
}

// circuitsVia is up to max circuit addresses (…/p2p/<relay>/p2p-circuit)
// through connected peers that serve circuit relay v2, the host pid
// excluded.
func (n *Node) circuitsVia(pid peer.ID, max int) []ma.Multiaddr {
	var out []ma.Multiaddr
	for _, r := range n.host.Network().Peers() {
		if r == pid || len(out) >= max {
			continue
		}
		if ok, _ := n.host.Peerstore().SupportsProtocols(r, relayHop); len(ok) == 0 {
			continue
		}
		for _, c := range n.host.Network().ConnsToPeer(r) {
			if c.Stat().Limited {
				continue
			}
			circuit, err := ma.NewMultiaddr("/p2p/" + r.String() + "/p2p-circuit")
			if err != nil {
				continue
			}
			out = append(out, c.RemoteMultiaddr().Encapsulate(circuit))
			break
		}
	}
	return out
}
