package heartbeat

import (
	"fmt"
	"slices"
	"testing"
)

// A heartbeat's addresses are cut at maxHeartbeatAddrs with the HTTP
// transport addresses kept: other nodes' ARD referrals read them.
func TestHeartbeatAddrsKeepHTTP(t *testing.T) {
	var addrs []string
	for i := range 20 {
		addrs = append(addrs, fmt.Sprintf("/ip4/10.0.0.%d/tcp/4001/p2p/12D3KooWX", i))
	}
	web := "/ip4/203.0.113.7/tcp/443/tls/http/p2p/12D3KooWX"
	addrs = append(addrs, web, "/ip4/203.0.113.7/tcp/80/https")
	got := heartbeatAddrs(addrs)
	if len(got) != maxHeartbeatAddrs {
		t.Fatalf("%d addresses, want %d", len(got), maxHeartbeatAddrs)
	}
	if !slices.Contains(got, web) || !slices.Contains(got, "/ip4/203.0.113.7/tcp/80/https") {
		t.Errorf("HTTP addresses cut off: %q", got)
	}
	if few := heartbeatAddrs(addrs[:3]); !slices.Equal(few, addrs[:3]) {
		t.Errorf("3 addresses: %q", few)
	}
}
