//go:build agentsite_testnet

package p2p

import (
	"testing"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Tests build their "internet" from the documentation prefix
// 198.51.100.0/24, which libp2p counts as unroutable until told. Run with
// go test -tags agentsite_testnet -run TestTreatAsPublic ./p2p.
func TestTreatAsPublic(t *testing.T) {
	saved := manet.Unroutable4
	t.Cleanup(func() { manet.Unroutable4 = saved })
	a := ma.StringCast("/ip4/198.51.100.1/tcp/4001")
	if manet.IsPublicAddr(a) {
		t.Fatal("198.51.100.1 public before the knob")
	}
	if err := TreatAsPublic([]string{"198.51.100.0/24"}); err != nil {
		t.Fatal(err)
	}
	if !manet.IsPublicAddr(a) {
		t.Fatal("198.51.100.1 still not public")
	}
	if manet.IsPublicAddr(ma.StringCast("/ip4/203.0.113.1/tcp/1")) || manet.IsPublicAddr(ma.StringCast("/ip4/192.168.1.2/tcp/1")) {
		t.Fatal("the knob made other prefixes public")
	}
	if err := TreatAsPublic([]string{"nonsense"}); err == nil {
		t.Fatal("a bad prefix was accepted")
	}
}
