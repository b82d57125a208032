package main

import (
	"slices"
	"testing"
)

// --public-url is announced as an HTTP multiaddr, so other nodes' ARD
// referrals can point at this node; an HTTP address the operator
// announced already is kept instead.
func TestPublicURLIsAnnounced(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"https://agents.example.org", "/dns/agents.example.org/tcp/443/tls/http"},
		{"https://agents.example.org:8443/", "/dns/agents.example.org/tcp/8443/tls/http"},
		{"http://203.0.113.7:8080", "/ip4/203.0.113.7/tcp/8080/http"},
		{"http://[2001:db8::1]", "/ip6/2001:db8::1/tcp/80/http"},
	} {
		got, err := publicHTTPAddr(c.url)
		if err != nil || got != c.want {
			t.Errorf("publicHTTPAddr(%q) = %q, %v; want %q", c.url, got, err, c.want)
		}
	}
	if _, err := publicHTTPAddr("ftp://x.example"); err == nil {
		t.Error("ftp:// accepted")
	}

	c := Config{PublicURL: "https://agents.example.org", Announce: []string{"/ip4/203.0.113.7/tcp/4001"}}
	if got := c.p2pConfig().Announce; !slices.Equal(got, []string{"/ip4/203.0.113.7/tcp/4001", "/dns/agents.example.org/tcp/443/tls/http"}) {
		t.Errorf("announced %q", got)
	}
	if len(c.Announce) != 1 {
		t.Errorf("--announce changed: %q", c.Announce)
	}
	c.Announce = []string{"/dns/other.example/tcp/443/tls/http"}
	if got := c.p2pConfig().Announce; !slices.Equal(got, c.Announce) {
		t.Errorf("with an announced HTTP address: %q", got)
	}
	if got := (&Config{Announce: []string{"/ip4/203.0.113.7/tcp/4001"}}).p2pConfig().Announce; len(got) != 1 {
		t.Errorf("without --public-url: %q", got)
	}
}
