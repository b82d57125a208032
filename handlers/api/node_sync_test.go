package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// TestAPIAgentsTotal: GET /api/v1/agents says how many listings the
// search matches over all its pages, on every page, for text, tags and
// statuses, so a script can watch a mirror fill.
func TestAPIAgentsTotal(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		tok := e.UserToken("carol")
		for i := range 7 {
			in := WeatherInput(fmt.Sprintf("weather-%d", i))
			if i%2 == 0 {
				in.Tags = []string{"weather", "even"}
			}
			WantStatus(t, e.Do("POST", "/api/v1/agents", in, Bearer(tok)...), http.StatusCreated)
		}
		other := WeatherInput("translator")
		other.DisplayName, other.Description, other.Tags = "Translator", "Translates text.", []string{"language"}
		WantStatus(t, e.Do("POST", "/api/v1/agents", other, Bearer(tok)...), http.StatusCreated)

		for _, c := range []struct {
			query string
			want  int
		}{
			{"", 8},
			{"?limit=3", 8},
			{"?q=weath&limit=3", 7},
			{"?tag=weather&tag=even", 4},
			{"?tag=language&status=online", 1},
			{"?status=offline", 0},
			{"?sort=name&limit=2", 8},
		} {
			list := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents"+c.query, nil))
			if list.Total == nil || *list.Total != c.want || list.TotalIsEstimate {
				t.Errorf("GET /api/v1/agents%s: total %v (estimate %v), want %d", c.query, list.Total, list.TotalIsEstimate, c.want)
			}
		}
		// The second page says the same total.
		first := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?q=weath&limit=3", nil))
		next := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?q=weath&limit=3&cursor="+first.NextCursor, nil))
		if next.Total == nil || *next.Total != 7 {
			t.Errorf("second page: total %v, want 7", next.Total)
		}
	})
}

// TestAPINodeSyncProgress: GET /api/v1/node reports, per peer synced
// with, the listings held of what it announces (its node row's count, its
// heartbeats' claim), the bytes read and the records refused by reason.
func TestAPINodeSyncProgress(t *testing.T) {
	e := New(t)
	const hostA, relayB = "12D3KooWHostA", "12D3KooWRelayB"
	if err := e.Store.UpsertNode(t.Context(), store.Node{PeerID: hostA, Version: "test", AgentsHosted: 10005,
		LastHeartbeat: time.Now(), Status: store.StatusOnline}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	e.UseSync(FakeSync{
		Progress: apiwire.SyncProgress{FillingShards: 2, FilledShards: 5, Shards: 8, Peers: []apiwire.PeerSync{
			{PeerID: hostA, Bytes: 9_500_000, Records: map[string]int64{"new": 10005, "refused": 10004},
				Refused: map[string]int64{"quota": 10004}, FillingShards: 2, LastSync: at},
			{PeerID: relayB, Bytes: 1200, Records: map[string]int64{"held": 30}, Refused: map[string]int64{}, LastSync: at},
		}},
		Claims: map[string]int{hostA: 20009},
	})
	node := Decode[apiwire.Node](t, e.Do("GET", "/api/v1/node", nil))
	if node.Sync == nil {
		t.Fatal("GET /api/v1/node has no sync")
	}
	s := node.Sync
	if s.FillingShards != 2 || s.FilledShards != 5 || s.Shards != 8 || len(s.Peers) != 2 {
		t.Fatalf("sync = %+v", s)
	}
	a, b := s.Peers[0], s.Peers[1]
	if a.PeerID != hostA || a.Held != 10005 || a.Announced == nil || *a.Announced != 20009 ||
		a.Bytes != 9_500_000 || a.Refused["quota"] != 10004 || a.Records["new"] != 10005 || a.FillingShards != 2 || !a.LastSync.Equal(at) {
		t.Errorf("host peer = %+v", a)
	}
	if b.PeerID != relayB || b.Held != 0 || b.Announced != nil || b.Records["held"] != 30 {
		t.Errorf("relay peer = %+v (announced %v)", b, b.Announced)
	}
}
