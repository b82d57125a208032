package api

import (
	"net/http"

	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// NodeInfo is GET /api/v1/node: who this node is, and its addresses for
// others to bootstrap from.
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
	httpkit.WriteJSON(w, http.StatusOK, apiwire.Node{
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
	})
}
