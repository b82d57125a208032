package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var portalCases = []testCase{
	{"Backends", testBackends},
	{"Nodes", testNodes},
}

func testBackends(t *testing.T, s store.Store) {
	ctx := testContext(t)
	l := newPublisher(t).listing(t, now(), agent.Record{Name: "local-llm"})
	l.Local = true
	mustUpsert(t, s, l)
	id := l.Record.ID

	if _, err := s.GetBackend(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetBackend before Put = %v, want ErrNotFound", err)
	}
	llm := agent.Backend{Kind: agent.BackendLLM, URL: "https://llm.example.org/v1", Model: "tiny",
		SystemPrompt: "Be brief.\nBe kind.", APIKey: "sk-secret-ключ",
		Tools: []agent.ToolServer{{URL: "https://tools.example.org/mcp", Header: "X-Api-Key", Secret: "tool-secret"}}}
	if err := s.PutBackend(ctx, id, llm); err != nil {
		t.Fatalf("PutBackend: %v", err)
	}
	if got, err := s.GetBackend(ctx, id); err != nil || !reflect.DeepEqual(got, llm) {
		t.Fatalf("GetBackend = %+v, %v; want %+v (API key included)", got.Redacted(), err, llm.Redacted())
	} else if got.APIKey != llm.APIKey || got.Tools[0].Secret != "tool-secret" {
		t.Fatalf("API key or tool secret did not round-trip")
	}
	hook := agent.Backend{Kind: agent.BackendWebhook, URL: "https://hook.example.org/in"}
	if err := s.PutBackend(ctx, id, hook); err != nil {
		t.Fatalf("PutBackend (replace): %v", err)
	}
	if got, err := s.GetBackend(ctx, id); err != nil || !reflect.DeepEqual(got, hook) {
		t.Fatalf("GetBackend after replace = %+v, %v; want %+v", got, err, hook)
	}
	if err := s.DeleteBackend(ctx, id); err != nil {
		t.Fatalf("DeleteBackend: %v", err)
	}
	if _, err := s.GetBackend(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetBackend after Delete = %v, want ErrNotFound", err)
	}
	if err := s.DeleteBackend(ctx, id); err != nil {
		t.Errorf("DeleteBackend of a deleted backend = %v, want nil", err)
	}
}

func testNodes(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	if got, err := s.ListNodes(ctx, store.NodeQuery{}); err != nil || len(got.Nodes) != 0 {
		t.Fatalf("ListNodes on an empty store = %v, %v", got, err)
	}
	n1 := store.Node{PeerID: newPublisher(t).peer, Addrs: []string{"/ip4/10.0.0.1/tcp/4001", "/ip4/10.0.0.1/udp/4001/quic-v1"},
		Version: "0.1.0", AgentsHosted: 3, Load: 0.25, LastHeartbeat: at.Add(-time.Minute), Status: store.StatusOnline}
	n2 := store.Node{PeerID: newPublisher(t).peer, Version: "0.2.0", LastHeartbeat: at.Add(-time.Hour), Status: store.StatusStale}
	for _, n := range []store.Node{n1, n2} {
		if err := s.UpsertNode(ctx, n); err != nil {
			t.Fatalf("UpsertNode: %v", err)
		}
	}
	n1.AgentsHosted, n1.Load, n1.LastHeartbeat, n1.Addrs = 5, 0.75, at, []string{"/ip4/10.0.0.2/tcp/4001"}
	if err := s.UpsertNode(ctx, n1); err != nil {
		t.Fatalf("UpsertNode (update): %v", err)
	}
	page, err := s.ListNodes(ctx, store.NodeQuery{})
	if err != nil {
		t.Fatalf("ListNodes: %v", err)
	}
	got := page.Nodes
	if len(got) != 2 {
		t.Fatalf("ListNodes = %d nodes, want 2", len(got))
	}
	byID := map[string]store.Node{got[0].PeerID: got[0], got[1].PeerID: got[1]}
	for _, want := range []store.Node{n1, n2} {
		g, ok := byID[want.PeerID]
		if !ok {
			t.Errorf("ListNodes misses %s", want.PeerID)
			continue
		}
		wantTime(t, "LastHeartbeat", g.LastHeartbeat, want.LastHeartbeat)
		g.LastHeartbeat = want.LastHeartbeat
		if len(g.Addrs) == 0 && len(want.Addrs) == 0 {
			g.Addrs = want.Addrs
		}
		if g.PeerID != want.PeerID || g.Version != want.Version || g.AgentsHosted != want.AgentsHosted ||
			g.Load != want.Load || g.Status != want.Status || !equalStrings(g.Addrs, want.Addrs) {
			t.Errorf("node read back as %+v, want %+v", g, want)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
