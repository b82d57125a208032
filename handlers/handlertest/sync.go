package handlertest

import (
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/apiwire"
)

// UseSync rebuilds the server telling how the catalogue fills from v, as
// a node does from its p2p sync and its Sink (cmd/agentsite).
func (e *Env) UseSync(v handlers.SyncView) {
	e.T.Helper()
	e.deps.Sync = v
	e.build()
}

// FakeSync is a node's catalogue fill as the API and the pages read it:
// the sync progress, the hosts' claims, what the hosts heard announce
// in all and whether a fill runs.
type FakeSync struct {
	Progress       apiwire.SyncProgress
	Claims         map[string]int
	AnnouncedTotal int
	Fills          bool
}

var _ handlers.SyncView = FakeSync{}

// SyncProgress implements handlers.SyncView.
func (f FakeSync) SyncProgress() apiwire.SyncProgress { return f.Progress }

// HostClaims implements handlers.SyncView: the Claims of ids.
func (f FakeSync) HostClaims(ids []string) map[string]int {
	out := map[string]int{}
	for _, id := range ids {
		if c, ok := f.Claims[id]; ok {
			out[id] = c
		}
	}
	return out
}

// Announced implements handlers.SyncView.
func (f FakeSync) Announced() (hosts, listings int) { return len(f.Claims), f.AnnouncedTotal }

// Filling implements handlers.SyncView.
func (f FakeSync) Filling() bool { return f.Fills }
