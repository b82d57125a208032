package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestNetMapLayout: every drawn node and label stays inside the picture,
// at most netMapMaxPeer peers are drawn (in the order given) and the rest
// are counted; a lone node gets a small picture.
func TestNetMapLayout(t *testing.T) {
	for _, n := range []int{0, 1, 2, 5, 24, 30} {
		var peers []NetPeer
		for i := range n {
			peers = append(peers, NetPeer{PeerID: fmt.Sprintf("12D3KooWpeer%04d", i), Connected: i%2 == 0})
		}
		m := NewNetMap(NetPeer{PeerID: "self"}, peers)
		if want := min(n, netMapMaxPeer); len(m.Peers) != want || m.Hidden != n-want {
			t.Errorf("%d peers: %d drawn, %d hidden", n, len(m.Peers), m.Hidden)
		}
		for i, p := range append([]NetMapNode{m.Self}, m.Peers...) {
			if p.X < 20 || p.X > float64(m.Width)-20 || p.Y < 20 || p.Y > float64(m.Height)-10 || p.LY > float64(m.Height) || p.LY < 10 {
				t.Errorf("%d peers: node %d at (%v,%v), label y %v, outside %dx%d", n, i, p.X, p.Y, p.LY, m.Width, m.Height)
			}
			if i > 0 && p.PeerID != peers[i-1].PeerID {
				t.Errorf("%d peers: drawn out of order", n)
			}
		}
		if n == 0 && m.Height >= netMapHeight {
			t.Errorf("a lone node gets the full-size picture")
		}
	}
	if got := NodeName("12D3KooWabcdefXYZ123"); got != "node XYZ123" {
		t.Errorf("NodeName = %q", got)
	}
}

// TestNetMapRelayedEdges: a peer connected only through a relay gets the
// dotted relayed edge (and the map says it has one); a direct or a
// heard-from peer does not.
func TestNetMapRelayedEdges(t *testing.T) {
	peers := []NetPeer{
		{PeerID: "12D3KooWdirect", Connected: true},
		{PeerID: "12D3KooWrelayed", Connected: true, Relayed: true},
		{PeerID: "12D3KooWheard", Status: "online"},
	}
	m := NewNetMap(NetPeer{PeerID: "self"}, peers)
	if !m.Relayed() {
		t.Error("map with a relayed peer: Relayed = false")
	}
	var b strings.Builder
	if err := netMap(m).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), `data-relayed="true"`); got != 1 {
		t.Errorf("%d relayed edges drawn, want 1:\n%s", got, b.String())
	}
	if got := strings.Count(b.String(), "net-edge-relayed"); got != 1 {
		t.Errorf("%d edges with the relayed class, want 1", got)
	}
	if NewNetMap(NetPeer{PeerID: "self"}, peers[:1]).Relayed() || NewNetMap(NetPeer{PeerID: "self"}, []NetPeer{{PeerID: "x", Relayed: true}}).Relayed() {
		t.Error("Relayed set without a connected relayed peer")
	}
}
