package store_test

import (
	"context"
	"testing"

	"github.com/agentsite/agentsite/store"
)

type fakeNamer struct {
	rows   []store.Node
	shared map[string]bool
}

func (f fakeNamer) GetNodes(_ context.Context, ids []string) ([]store.Node, error) {
	var out []store.Node
	for _, r := range f.rows {
		for _, id := range ids {
			if r.PeerID == id {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func (f fakeNamer) SharedNodeNames(_ context.Context, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, n := range names {
		if f.shared[n] {
			out[n] = true
		}
	}
	return out, nil
}

// Labels: a unique name alone, a shared name with the short id, no name
// as "node <short id>", this node by its own name; a node named like
// this one gets its short id.
func TestNodeLabels(t *testing.T) {
	const self, b, c, d, e = "12D3KooWselfAAAAAA", "12D3KooWbbbbbbnodeB1", "12D3KooWcccccctwin01", "12D3KooWddddddtwin02", "12D3KooWeeeeeeSelfNm"
	labels := &store.NodeLabels{
		Nodes: fakeNamer{rows: []store.Node{
			{PeerID: b, Name: "node-b"}, {PeerID: c, Name: "twin"}, {PeerID: d, Name: "twin"}, {PeerID: e, Name: "node-a"},
		}, shared: map[string]bool{"twin": true}},
		SelfID: self, SelfName: "node-a",
	}
	got, err := labels.Labels(context.Background(), []string{self, b, c, "12D3KooWneverheard", e, b})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{self: "node-a", b: "node-b", c: "twin (twin01)", "12D3KooWneverheard": "node rheard", e: "node-a (SelfNm)"} {
		if s := got[id].String(); s != want {
			t.Errorf("label of %s = %q, want %q", id, s, want)
		}
	}
	if !got[self].Self || got[b].Self {
		t.Errorf("Self marks: %+v", got)
	}
	if s := labels.HostLabel(context.Background(), store.Listing{HostPeerID: b}); s != "node-b" {
		t.Errorf("HostLabel of node-b's listing = %q", s)
	}
	if s := labels.HostLabel(context.Background(), store.Listing{Local: true}); s != "this node" {
		t.Errorf("HostLabel of a local listing = %q", s)
	}
}
