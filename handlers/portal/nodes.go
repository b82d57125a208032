package portal

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// peerLister is a Node that can say which peers it is connected to, and
// which of them only through a relay (p2p.Node can); without it the
// picture shows only the nodes heard from.
type peerLister interface {
	ConnectedPeers() []string
	RelayedPeers() []string
}

// netPeers is every peer of the picture but self: connected ones first
// (so they are drawn when there are many), then the ones only heard from,
// each group in peer id order.
func netPeers(n httpkit.Node, self string, nodes []store.Node) []web.NetPeer {
	var connected, relayed []string
	if pl, ok := n.(peerLister); ok {
		connected, relayed = pl.ConnectedPeers(), pl.RelayedPeers()
	}
	byID := map[string]web.NetPeer{}
	for _, nd := range nodes {
		if nd.PeerID != self {
			byID[nd.PeerID] = web.NetPeer{PeerID: nd.PeerID, Status: nd.Status, Agents: nd.AgentsHosted}
		}
	}
	for _, id := range connected {
		if id == self {
			continue
		}
		p := byID[id]
		p.PeerID, p.Connected = id, true
		p.Relayed = slices.Contains(relayed, id)
		byID[id] = p
	}
	out := make([]web.NetPeer, 0, len(byID))
	for _, p := range byID {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b web.NetPeer) int {
		if a.Connected != b.Connected {
			if a.Connected {
				return -1
			}
			return 1
		}
		return strings.Compare(a.PeerID, b.PeerID)
	})
	return out
}

// nodesPageSize is how many rows of the nodes table /nodes shows at once:
// before paging, the 21,106 rows one rogue peer's fresh identities left
// made a 15.1 MB page that took 0.8 s.
const nodesPageSize = 100

// maxNodeCursor bounds a peer ID taken from the query string (an Ed25519
// peer ID is 52 characters).
const maxNodeCursor = 128

// netCount is what the front page and the Network page count of the
// network, read without loading the nodes table.
type netCount struct {
	total     int          // nodes known: heard from or connected, and this one
	heard     int          // other nodes heard from (rows of the nodes table)
	connected []store.Node // the rows of the connected peers that have one
}

// netKnown counts the nodes of the network this node knows: the rows of
// the nodes table (COUNT ... GROUP BY status), plus the connected peers
// that have none, plus this node. Only the connected peers' rows are read.
func (p *Pages) netKnown(ctx context.Context) (netCount, error) {
	counts, err := p.Catalog.CountNodes(ctx)
	if err != nil {
		return netCount{}, err
	}
	rows := 0
	for _, n := range counts {
		rows += n
	}
	self := p.Node.PeerID()
	var connected []string
	if pl, ok := p.Node.(peerLister); ok {
		connected = pl.ConnectedPeers()
	}
	ids := append([]string{self}, connected...)
	have, err := p.Catalog.GetNodes(ctx, ids)
	if err != nil {
		return netCount{}, err
	}
	c := netCount{heard: rows}
	hasRow := make(map[string]bool, len(have))
	for _, n := range have {
		hasRow[n.PeerID] = true
		if n.PeerID == self {
			c.heard-- // this node is counted once, as itself
		} else {
			c.connected = append(c.connected, n)
		}
	}
	c.total = c.heard + 1
	for _, id := range connected {
		if id != self && !hasRow[id] {
			hasRow[id] = true
			c.total++
		}
	}
	return c, nil
}

// PageNodes is the Network page: a picture of the peers this node sees,
// the counts (this node included), this node's addresses to bootstrap
// from, and the nodes it has heard from, nodesPageSize at a time in peer
// ID order (?after= and ?before= a peer ID). The picture draws the
// connected peers and the page's nodes, never the whole table.
func (p *Pages) PageNodes(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	local, err := p.Catalog.CountLocal(ctx)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	q := store.NodeQuery{Limit: nodesPageSize}
	if after := r.URL.Query().Get("after"); len(after) <= maxNodeCursor {
		q.After = after
	}
	if before := r.URL.Query().Get("before"); len(before) <= maxNodeCursor {
		q.Before = before
	}
	page, err := p.Catalog.ListNodes(ctx, q)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	known, err := p.netKnown(ctx)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	self := p.Node.PeerID()
	now := p.now()
	all := append(known.connected, page.Nodes...)
	ids := make([]string, 0, len(all)+1)
	for _, n := range all {
		ids = append(ids, n.PeerID)
	}
	if pl, ok := p.Node.(peerLister); ok {
		ids = append(ids, pl.ConnectedPeers()...)
	}
	labels := p.labelsOf(ctx, append(ids, self))
	var claims map[string]int
	if p.Fill != nil {
		pageIDs := make([]string, 0, len(page.Nodes))
		for _, n := range page.Nodes {
			pageIDs = append(pageIDs, n.PeerID)
		}
		claims = p.Fill.HostClaims(pageIDs)
	}
	rows := make([]web.NodeRow, 0, len(page.Nodes))
	for _, n := range page.Nodes {
		claim, known := claims[n.PeerID]
		rows = append(rows, web.NodeRow{
			Announced:        claim,
			AnnouncedKnown:   known && n.PeerID != self,
			PeerID:           n.PeerID,
			Host:             hostViewOf(labels[n.PeerID]),
			Status:           n.Status,
			Version:          n.Version,
			AgentsHosted:     n.AgentsHosted,
			LastHeartbeat:    n.LastHeartbeat,
			LastHeartbeatAgo: web.Ago(n.LastHeartbeat, now),
			Self:             n.PeerID == self,
			Verified:         p.verifiedDomains(n.PeerID),
		})
	}
	peers := netPeers(p.Node, self, all)
	for i := range peers {
		if l := labels[peers[i].PeerID]; l.Name != "" {
			peers[i].Label = hostViewOf(l).Label()
		}
	}
	v := web.NodesView{
		Page:         p.page(r, p.viewer(r), "Network", "nodes"),
		PeerID:       self,
		Name:         p.NodeName,
		Verified:     p.verifiedDomains(self),
		Addrs:        p.Node.Addrs(),
		Peers:        p.Node.PeerCount(),
		AgentsHosted: local.N,
		Version:      p.Version,
		Nodes:        rows,
		NodesKnown:   known.total,
		NodesHeard:   known.heard,
		Map:          web.NewNetMap(web.NetPeer{PeerID: self, Status: store.StatusOnline, Connected: true, Agents: local.N, Label: p.NodeName}, peers),
	}
	if page.Prev != "" {
		v.PrevHref = "/nodes?" + url.Values{"before": {page.Prev}}.Encode()
	}
	if page.Next != "" {
		v.NextHref = "/nodes?" + url.Values{"after": {page.Next}}.Encode()
	}
	v.NAT = web.NodeNAT{Reachability: reachability(p.Node.Reachability(), v.Addrs), RelayAddrs: p.Node.RelayAddrs()}
	v.NAT.DirectPeers, v.NAT.RelayedPeers = p.Node.PeerKinds()
	p.render(w, r, http.StatusOK, web.NodesPage(v))
}

// reachability is what the page says of how others reach this node:
// AutoNAT's verdict, but "local network only" (web.ReachLocal) when the
// verdict is unknown and every address is loopback or private, as on a
// planet of one machine: there AutoNAT never decides, and "unknown"
// would stay forever.
func reachability(verdict string, addrs []string) string {
	if verdict != "unknown" && verdict != "" || len(addrs) == 0 {
		return verdict
	}
	for _, a := range addrs {
		ip, ok := multiaddrIP(a)
		if !ok || !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()) {
			return verdict
		}
	}
	return web.ReachLocal
}

// multiaddrIP is the IP of a multiaddr that starts /ip4/ or /ip6/.
func multiaddrIP(a string) (netip.Addr, bool) {
	parts := strings.Split(a, "/")
	if len(parts) < 3 || parts[1] != "ip4" && parts[1] != "ip6" {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(parts[2])
	return ip, err == nil
}
