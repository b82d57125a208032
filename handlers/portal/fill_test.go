package portal_test

import (
	"net/http"
	"testing"
	"time"

	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// TestNodesHoldingNofM: /nodes says, per host heard, how many of the
// listings it announces (its heartbeats' signed agents_hosted) this node
// holds; a host whose claim was not heard shows the count alone.
func TestNodesHoldingNofM(t *testing.T) {
	e := New(t)
	const short, whole, unheard = "12D3KooWHostShort", "12D3KooWHostWhole", "12D3KooWHostUnheard"
	for id, held := range map[string]int{short: 10005, whole: 40, unheard: 7} {
		if err := e.Store.UpsertNode(t.Context(), store.Node{PeerID: id, Version: "test", AgentsHosted: held,
			LastHeartbeat: time.Now(), Status: store.StatusOnline}); err != nil {
			t.Fatal(err)
		}
	}
	e.UseSync(FakeSync{Claims: map[string]int{short: 20009, whole: 40}})
	doc := e.Page("/nodes", http.StatusOK)
	row := func(id string) string { return `[data-testid="node-row"][data-peer-id="` + id + `"] ` }
	for _, c := range []struct{ id, holding, class string }{
		{short, "holding 10005 of 20009", "holding-short"},
		{whole, "holding 40 of 40", ""},
	} {
		h := doc.Find(row(c.id) + `[data-testid="node-holding"]`)
		if h.Length() != 1 || Text(h) != c.holding {
			t.Errorf("host %s: holding %q, want %q", c.id, Text(h), c.holding)
		}
		if c.class != "" && !h.HasClass(c.class) {
			t.Errorf("host %s: holding is not marked %s", c.id, c.class)
		}
		if title := h.AttrOr("title", ""); title == "" {
			t.Errorf("host %s: holding has no title saying what it counts", c.id)
		}
	}
	if n := doc.Find(row(unheard) + `[data-testid="node-holding"]`).Length(); n != 0 {
		t.Errorf("a host whose claim was not heard shows holding")
	}
	if got := Text(doc.Find(row(unheard) + `[data-testid="node-agents"]`)); got != "7" {
		t.Errorf("unheard host's agents = %q, want 7", got)
	}
}

// TestHomeSyncing: while a catalogue fill runs the home page says how
// many of the listings the hosts heard announce this node holds (this
// node's own left out); once no fill runs it says nothing of it.
func TestHomeSyncing(t *testing.T) {
	e := New(t)
	for _, name := range []string{"remote-one", "remote-two", "remote-three"} {
		e.SeedRemote(name, name, "someone")
	}
	e.SeedAgent("alice", WeatherInput("local-weather")) // this node's own: not counted
	e.UseSync(FakeSync{Claims: map[string]int{"12D3KooWHost": 50}, AnnouncedTotal: 50, Fills: true})
	doc := e.Page("/", http.StatusOK)
	line := MustTestid(t, doc, "home-syncing")
	if held, announced := Text(Testid(doc, "sync-held")), Text(Testid(doc, "sync-announced")); held != "3" || announced != "50" {
		t.Errorf("syncing: %q of %q, want 3 of 50 (%q)", held, announced, Text(line))
	}
	if role := line.AttrOr("role", ""); role != "status" {
		t.Errorf("syncing line role %q, want status", role)
	}

	e.UseSync(FakeSync{Claims: map[string]int{"12D3KooWHost": 50}, AnnouncedTotal: 50})
	if n := Testid(e.Page("/", http.StatusOK), "home-syncing").Length(); n != 0 {
		t.Error("the home page says syncing while no fill runs")
	}
}
