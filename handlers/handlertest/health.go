package handlertest

import "github.com/agentsite/agentsite/agent"

// SetHealth records h for the env's own agent id, as this node's heartbeat
// would (only the host's word counts, so it is set for the node's peer).
func (e *Env) SetHealth(id string, h agent.Health) {
	e.T.Helper()
	n, err := e.Store.SetHealth(e.T.Context(), e.Node.PeerID(), map[string]agent.Health{id: h})
	if err != nil || n != 1 {
		e.T.Fatalf("set health of %s: %d changed, %v", id, n, err)
	}
}
