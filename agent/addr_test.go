package agent

import (
	"testing"
)

// A heartbeat address keeps private and loopback IPs (LAN and one-machine
// planets) but not a /dns value that is not a host name, nor an IP form
// that stands for another address.
func TestCheckAnnouncedAddr(t *testing.T) {
	for _, a := range []string{
		"/ip4/127.0.0.1/tcp/4001", "/ip4/192.168.1.5/udp/4001/quic-v1", "/ip6/::1/tcp/4001",
		"/dns4/agents.example.org/tcp/443/tls/http", "/dns/a-b.example.org./tcp/80/http", "/dnsaddr/bootstrap.libp2p.io",
		"/ip4/93.184.216.34/tcp/80/http",
	} {
		if err := CheckAnnouncedAddr(a); err != nil {
			t.Errorf("CheckAnnouncedAddr(%s) = %v, want nil", a, err)
		}
	}
	for _, a := range []string{
		"/dns4/127.0.0.1/tcp/21599/http", "/dns4/169.254.169.254/tcp/80/http", "/dns4/trusted.example.org@127.0.0.1/tcp/80/http",
		"/dns6/::1/tcp/80/http", "/dns4/a.example.org:80/tcp/80/http", "/dns4/a.example.org?x/tcp/80/http",
		"/dns4/a.example.org#x/tcp/80/http", "/dns4/2130706433/tcp/80/http", "/dns4/127.1/tcp/80/http", "/dns4/x.0x7f/tcp/80/http",
		"/ip6/::ffff:127.0.0.1/tcp/80/http", "/ip6/64:ff9b::a9fe:a9fe/tcp/80/http", "/ip6/2002:7f00:1::/tcp/80/http",
		"/ip4/0.0.0.0/tcp/80", "/ip4/224.0.0.1/tcp/80", "not an address", "",
	} {
		if err := CheckAnnouncedAddr(a); err == nil {
			t.Errorf("CheckAnnouncedAddr(%s) = nil, want it refused", a)
		}
	}
	kept, dropped := AnnouncedAddrs([]string{"/ip4/127.0.0.1/tcp/1", "/dns4/127.0.0.1/tcp/80/http"})
	if len(kept) != 1 || dropped != 1 {
		t.Errorf("AnnouncedAddrs = %v, %d dropped", kept, dropped)
	}
	if kept, _ := AnnouncedAddrs(nil); kept != nil {
		t.Errorf("AnnouncedAddrs(nil) = %v, want nil (unchanged)", kept)
	}
	if kept, _ := AnnouncedAddrs([]string{"/dns4/127.0.0.1/tcp/80/http"}); kept == nil || len(kept) != 0 {
		t.Errorf("all dropped = %#v, want an empty list", kept)
	}
}
