package peermcp

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

// historyAnswerer answers as the runtime does with a backend that reads
// the history or not (reads, by agent), and keeps the turns it answered.
type historyAnswerer struct {
	mu    sync.Mutex
	reads map[string]bool
	turns []agent.Turn
}

func (a *historyAnswerer) Answer(_ context.Context, t agent.Turn, emit func(string) error) (string, error) {
	a.mu.Lock()
	reads := a.reads[t.AgentID]
	a.turns = append(a.turns, t)
	a.mu.Unlock()
	switch {
	case t.HistoryOmitted && reads:
		return "", agent.ErrHistoryRequired
	case !reads && t.OnHistoryUnread != nil:
		t.OnHistoryUnread()
	}
	return t.Text, emit(t.Text)
}

func (a *historyAnswerer) setReads(id string, reads bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reads[id] = reads
}

// took returns the turns answered since the last call.
func (a *historyAnswerer) took() []agent.Turn {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.turns
	a.turns = nil
	return out
}

// TestHistoryLeftOutForAgentsThatDoNotReadIt: once a host says an agent
// does not read the history, its next turns go without it; an agent that
// reads it always gets it; and when an agent starts reading it, the host
// refuses the turn without it and the caller sends it again, whole, so
// no turn is answered without the history its agent reads.
func TestHistoryLeftOutForAgentsThatDoNotReadIt(t *testing.T) {
	h := newTestHost(t)
	ans := &historyAnswerer{reads: map[string]bool{h.echo: false, h.alices: true}}
	h.cfg.Answerer = ans
	srv := httptest.NewServer(NewHandler(h.cfg))
	defer srv.Close()
	host, portal := mcpTestNode(t), mcpTestNode(t)
	host.ServeMCPLines(NewLinesHandler(h.cfg).ServeStream)
	mcpIntroduce(portal, host)
	clients := map[string]func() (*Client, string){
		"lean": func() (*Client, string) { return NewClient(httpNet{srv}, ClientConfig{Version: "test"}), "host" },
		"mcp-go": func() (*Client, string) {
			return NewClient(httpNet{srv}, ClientConfig{Version: "test", noLean: true}), "host"
		},
		"lines": func() (*Client, string) { return NewClient(portal, ClientConfig{Version: "test"}), host.PeerID() },
	}
	for lean, newClient := range clients {
		ans.setReads(h.echo, false)
		c, hostID := newClient()
		hist := []agent.ChatMessage{{Role: agent.RoleUser, Text: "one"}, {Role: agent.RoleAgent, Text: "one"}}
		send := func(id, owner, text string) {
			t.Helper()
			reply, err := c.Send(t.Context(), hostID, agent.Turn{AgentID: id, Owner: owner, Text: text, History: hist}, func(string) error { return nil })
			if err != nil || reply != text {
				t.Fatalf("%s: Send(%q) = %q, %v", lean, text, reply, err)
			}
		}
		histories := func() (out []int) {
			for _, tn := range ans.took() {
				n := len(tn.History)
				if tn.HistoryOmitted {
					n = -1 // left out
				}
				out = append(out, n)
			}
			return out
		}
		same := func(what string, got []int, want ...int) {
			t.Helper()
			if len(got) != len(want) {
				t.Fatalf("%s, %s: the host got histories %v, want %v (-1: left out)", lean, what, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s, %s: the host got histories %v, want %v (-1: left out)", lean, what, got, want)
				}
			}
		}
		send(h.echo, "", "first")
		same("the first turn", histories(), 2)
		send(h.echo, "", "second")
		send(h.echo, "", "third")
		same("once the host said echo reads none", histories(), -1, -1)
		send(h.alices, "alice", "a")
		send(h.alices, "alice", "b")
		same("an agent that reads it", histories(), 2, 2)
		ans.setReads(h.echo, true)
		send(h.echo, "", "fourth")
		same("echo now reads it: refused, then sent whole", histories(), -1, 2)
		send(h.echo, "", "fifth")
		same("and from then on", histories(), 2)
		_ = c.Close()
	}
}
