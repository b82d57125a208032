package web

import (
	"fmt"
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
