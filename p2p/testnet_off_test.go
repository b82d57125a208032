//go:build !agentsite_testnet

package p2p

import (
	"testing"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// TestTreatAsPublicRefused: a normal build never rewrites go-multiaddr's
// process-wide ranges, so one node's test flag cannot change what every
// other host in the process counts as public.
func TestTreatAsPublicRefused(t *testing.T) {
	a := ma.StringCast("/ip4/198.51.100.1/tcp/4001")
	if err := TreatAsPublic([]string{"198.51.100.0/24"}); err == nil {
		t.Fatal("TreatAsPublic was accepted in a normal build")
	}
	if manet.IsPublicAddr(a) {
		t.Fatal("198.51.100.1 counts as public after a refused TreatAsPublic")
	}
	if err := TreatAsPublic(nil); err != nil {
		t.Fatalf("no prefixes: %v", err)
	}
}
