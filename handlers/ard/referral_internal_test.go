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
		{[]string{"/ip4/93.184.216.34/tcp/80/http"}, false, "http://93.184.216.34/ard/search"},
		{[]string{"/ip4/93.184.216.34/tcp/8080/http", "/dns4/a.example.org/tcp/443/tls/http"}, false, "https://a.example.org/ard/search"},
		{[]string{"/ip6/2606:4700::1/tcp/443/tls/http"}, false, "https://[2606:4700::1]/ard/search"},
		{[]string{"/dns4/a.example.org/tcp/443/tls/http/http-path/hub%2Fv1"}, false, "https://a.example.org/hub/v1/ard/search"},
		{[]string{"/ip4/127.0.0.1/tcp/8080/http"}, false, ""},
		{[]string{"/ip4/127.0.0.1/tcp/8080/http"}, true, "http://127.0.0.1:8080/ard/search"},
		{[]string{"/ip4/10.0.0.2/tcp/8080/http"}, false, ""},
		{[]string{"/ip4/93.184.216.34/tcp/4001" + pid, "/ip4/93.184.216.34/udp/4001/quic-v1"}, false, ""},
		{[]string{"/ip4/93.184.216.34/tcp/4001/p2p-circuit/http", "not an address"}, false, ""},
		{nil, true, ""},
		// What a rogue heartbeat announces: IP literals in /dns values,
		// user-info spoofs, special ranges in every form.
		{[]string{"/dns4/127.0.0.1/tcp/21599/http"}, false, ""},
		{[]string{"/dns4/169.254.169.254/tcp/80/http"}, false, ""},
		{[]string{"/dns4/169.254.169.254/tcp/80/http"}, true, ""},
		{[]string{"/dns4/trusted.example.org@127.0.0.1/tcp/80/http"}, false, ""},
		{[]string{"/dns4/trusted.example.org@127.0.0.1/tcp/80/http"}, true, ""},
		{[]string{"/dns4/a.example.org:80/tcp/80/http"}, false, ""},
		{[]string{"/dns4/a.example.org?q/tcp/80/http"}, false, ""},
		{[]string{"/dns4/a.example.org#f/tcp/80/http"}, false, ""},
		{[]string{"/dns4/2130706433/tcp/80/http"}, false, ""},
		{[]string{"/dns4/intranet/tcp/80/http"}, false, ""},
		{[]string{"/dns4/metadata.google.internal/tcp/80/http"}, false, ""},
		{[]string{"/ip4/100.64.0.1/tcp/80/http"}, false, ""},
		{[]string{"/ip4/100.64.0.1/tcp/80/http"}, true, ""},
		{[]string{"/ip4/169.254.169.254/tcp/80/http"}, true, ""},
		{[]string{"/ip4/192.0.0.192/tcp/80/http"}, false, ""},
		{[]string{"/ip6/64:ff9b::7f00:1/tcp/80/http"}, false, ""},
		{[]string{"/ip6/64:ff9b::a9fe:a9fe/tcp/80/http"}, true, ""},
		{[]string{"/ip6/2002:7f00:1::1/tcp/80/http"}, false, ""},
		{[]string{"/ip6/2002:a9fe:a9fe::1/tcp/80/http"}, true, ""},
		{[]string{"/ip6/::ffff:127.0.0.1/tcp/80/http"}, true, ""},
		{[]string{"/ip6/::ffff:169.254.169.254/tcp/80/http"}, false, ""},
		{[]string{"/ip6/fe80::1/tcp/80/http"}, true, ""},
		{[]string{"/dns6/::1/tcp/80/http"}, false, ""},
		{[]string{"/ip6/fd00:ec2::254/tcp/80/http"}, true, ""},
		{[]string{"/ip6/fd00::1/tcp/80/http"}, true, "http://[fd00::1]/ard/search"},
		{[]string{"/dns4/93.184.216.34/tcp/80/http"}, false, "http://93.184.216.34/ard/search"},
		{[]string{"/dns4/Agents.Example.ORG./tcp/443/https"}, false, "https://agents.example.org/ard/search"},
	} {
		got, ok := registryURL(c.addrs, c.private)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("registryURL(%v, private %v) = %q %v, want %q", c.addrs, c.private, got, ok, c.want)
		}
	}
}
