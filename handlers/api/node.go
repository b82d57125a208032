package api

import (
	"context"
	"net/http"

	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// SyncProgress is how the catalogue fills from the network (cmd/agentsite
// answers from p2p's sync and the Sink's memory of heartbeats).
type SyncProgress interface {
	// SyncProgress is the shards and, per peer, what sync brought; its
	// Held and Announced are left to the API.
	SyncProgress() apiwire.SyncProgress
	// HostClaims are the listings the peers of ids heard say they host
	// (absent: not heard since the node started).
	HostClaims(ids []string) map[string]int
}

// nodeReader reads node rows: what this node holds of each host (their
// agents_hosted, capped at the listings held here).
type nodeReader interface {
	GetNodes(ctx context.Context, ids []string) ([]store.Node, error)
}

// NodeInfo is GET /api/v1/node: who this node is, and its addresses for
// others to bootstrap from; and how its catalogue fills from its peers.
func (a *API) NodeInfo(w http.ResponseWriter, r *http.Request) {
	local, err := a.Catalog.CountLocal(r.Context())
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	addrs := a.Node.Addrs()
	if addrs == nil {
		addrs = []string{}
	}
	direct, relayed := a.Node.PeerKinds()
	out := apiwire.Node{
		Reachability: a.Node.Reachability(),
		RelayAddrs:   a.Node.RelayAddrs(),
		DirectPeers:  direct,
		RelayedPeers: relayed,
		PeerID:       a.Node.PeerID(),
		Name:         a.NodeName,
		Addrs:        addrs,
		Version:      a.Version,
		AgentsHosted: local.N,
		Peers:        a.Node.PeerCount(),
		Domains:      a.ownDomains(),
	}
	if a.Sync != nil {
		sp, err := a.syncProgress(r.Context())
		if err != nil {
			a.Fail(w, r, err)
			return
		}
		out.Sync = &sp
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// syncProgress is a.Sync's, each peer's Held from its node row and its
// Announced from its heartbeats.
func (a *API) syncProgress(ctx context.Context) (apiwire.SyncProgress, error) {
	sp := a.Sync.SyncProgress()
	if sp.Peers == nil {
		sp.Peers = []apiwire.PeerSync{}
	}
	ids := make([]string, len(sp.Peers))
	for i, p := range sp.Peers {
		ids[i] = p.PeerID
	}
	held := map[string]int{}
	if nr, ok := a.Catalog.(nodeReader); ok && len(ids) > 0 {
		nodes, err := nr.GetNodes(ctx, ids)
		if err != nil {
			return sp, err
		}
		for _, n := range nodes {
			held[n.PeerID] = n.AgentsHosted
		}
	}
	claims := a.Sync.HostClaims(ids)
	for i := range sp.Peers {
		p := &sp.Peers[i]
		p.Held = held[p.PeerID]
		if c, ok := claims[p.PeerID]; ok {
			p.Announced = &c
		}
	}
	return sp, nil
}
