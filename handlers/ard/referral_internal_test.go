package ard

import "testing"

// A node's HTTP address is read from libp2p's HTTP transport multiaddrs
// only; a public node never refers to a private one.
func TestRegistryURL(t *testing.T) {
	const pid = "/p2p/12D3KooWBy6UaJ3Ue5QV4QwZ6RYZVDNHyJ3yFAnXJXsNuxYPfm88"
	for _, c := range []struct {
		addrs   []string
		private bool
		want    string
	}{
		{[]string{"/dns4/a.example.org/tcp/443/tls/http" + pid}, false, "https://a.example.org/ard/search"},
		{[]string{"/dns/a.example.org/tcp/443/https"}, false, "https://a.example.org/ard/search"},
		{[]string{"/ip4/203.0.113.7/tcp/80/http"}, false, "http://203.0.113.7/ard/search"},
		{[]string{"/ip4/203.0.113.7/tcp/8080/http", "/dns4/a.example.org/tcp/443/tls/http"}, false, "https://a.example.org/ard/search"},
		{[]string{"/ip6/2001:db8::1/tcp/443/tls/http"}, false, "https://[2001:db8::1]/ard/search"},
		{[]string{"/dns4/a.example.org/tcp/443/tls/http/http-path/hub%2Fv1"}, false, "https://a.example.org/hub/v1/ard/search"},
		{[]string{"/ip4/127.0.0.1/tcp/8080/http"}, false, ""},
		{[]string{"/ip4/127.0.0.1/tcp/8080/http"}, true, "http://127.0.0.1:8080/ard/search"},
		{[]string{"/ip4/10.0.0.2/tcp/8080/http"}, false, ""},
		{[]string{"/ip4/203.0.113.7/tcp/4001" + pid, "/ip4/203.0.113.7/udp/4001/quic-v1"}, false, ""},
		{[]string{"/ip4/203.0.113.7/tcp/4001/p2p-circuit/http", "not an address"}, false, ""},
		{nil, true, ""},
	} {
		got, ok := registryURL(c.addrs, c.private)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("registryURL(%v, private %v) = %q %v, want %q", c.addrs, c.private, got, ok, c.want)
		}
	}
}
