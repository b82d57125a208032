package verify_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/verify"
	"github.com/agentsite/agentsite/agent/verify/verifytest"
)

const peerID = "12D3KooWGzxzKZYveHXtpG6AsrUJBcWxHBFS2HsEoGTxrMLvKXtf"

// fetcher GETs through client, every host dialled at addr (the test
// server), TLS checked against the client's roots.
func fetcher(client *http.Client) verify.Fetcher {
	return func(ctx context.Context, url string, max int64) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, errors.New(resp.Status)
		}
		return io.ReadAll(io.LimitReader(resp.Body, max))
	}
}

func tlsClient(ts *httptest.Server, trustCA bool) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, ts.Listener.Addr().String())
	}, TLSClientConfig: &tls.Config{}}
	if trustCA {
		tr.TLSClientConfig.RootCAs = ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// DNS: a TXT record with this node's peer id proves the domain; another
// peer's does not, and the reason says what was looked for.
func TestVerifyDNS(t *testing.T) {
	dns := verifytest.StartDNS(t)
	dns.Set("example.org", "v=spf1 -all", "agentsite-verify="+peerID)
	dns.Set("other.org", "agentsite-verify=12D3KooWSomeoneElse")
	c := &verify.Checker{PeerID: peerID, LookupTXT: dns.Resolver()}
	if err := c.Claim("Example.ORG.", "other.org", "missing.org"); err != nil {
		t.Fatal(err)
	}
	c.CheckDue(t.Context())
	if got := c.Verified(); len(got) != 1 || got[0] != "example.org" {
		t.Fatalf("verified = %v, statuses %+v", got, c.Statuses())
	}
	for _, s := range c.Statuses() {
		switch s.Domain {
		case "example.org":
			if s.Method != verify.MethodDNS || s.VerifiedAt.IsZero() {
				t.Errorf("example.org: %+v", s)
			}
		case "other.org":
			if s.Verified || !strings.Contains(s.LastError, "no agentsite-verify="+peerID) {
				t.Errorf("other.org: %+v", s)
			}
		case "missing.org":
			if s.Verified || s.Failures != 1 || s.LastError == "" {
				t.Errorf("missing.org: %+v", s)
			}
		}
	}
	if err := c.Claim("not a domain"); err == nil {
		t.Error("a claim of a non-domain was taken")
	}
}

// HTTPS: the well-known document listing the peer id proves the domain,
// over TLS checked against a test CA; an untrusted certificate or a
// document without the peer id does not.
func TestVerifyHTTPS(t *testing.T) {
	doc := `{"peer_ids": ["12D3KooWSomeoneElse", "` + peerID + `"]}`
	var mu sync.Mutex
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != verify.WellKnownPath || r.Host != "example.com" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, doc)
	}))
	t.Cleanup(ts.Close)
	// httptest's certificate is for example.com: the proof is checked for
	// that name, with real TLS verification.
	c := &verify.Checker{PeerID: peerID, Fetch: fetcher(tlsClient(ts, true))}
	if m, err := c.Prove(t.Context(), "example.com"); err != nil || m != verify.MethodHTTPS {
		t.Fatalf("Prove = %s, %v", m, err)
	}
	untrusting := &verify.Checker{PeerID: peerID, Fetch: fetcher(tlsClient(ts, false))}
	if _, err := untrusting.Prove(t.Context(), "example.com"); !errors.Is(err, verify.ErrNotProved) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: %v", err)
	}
	mu.Lock()
	doc = `{"peer_ids": ["12D3KooWSomeoneElse"]}`
	mu.Unlock()
	if _, err := c.Prove(t.Context(), "example.com"); err == nil || !strings.Contains(err.Error(), "does not list") {
		t.Errorf("document without the peer: %v", err)
	}
}

// A verified domain is checked again every Every; three failures in a row
// unverify it (two do not), a success verifies it again, and OnChange
// hears each change.
func TestVerifyExpiry(t *testing.T) {
	dns := verifytest.StartDNS(t)
	dns.Set("example.org", "agentsite-verify="+peerID)
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	var changes [][]string
	c := &verify.Checker{PeerID: peerID, LookupTXT: dns.Resolver(), Every: time.Hour,
		Now: func() time.Time { return now }, OnChange: func(v []string) { changes = append(changes, v) }}
	if err := c.Claim("example.org"); err != nil {
		t.Fatal(err)
	}
	c.CheckDue(t.Context())
	if len(c.Verified()) != 1 || len(changes) != 1 {
		t.Fatalf("verified %v, changes %v", c.Verified(), changes)
	}
	dns.Set("example.org")  // the record is gone
	c.CheckDue(t.Context()) // not due yet: nothing checked
	if s := c.Statuses()[0]; s.Failures != 0 || !s.Verified {
		t.Errorf("checked before due: %+v", s)
	}
	for i := 1; i <= 3; i++ {
		now = now.Add(time.Hour)
		c.CheckDue(t.Context())
		s := c.Statuses()[0]
		if s.Failures != i || s.Verified != (i < 3) {
			t.Errorf("after failure %d: %+v", i, s)
		}
	}
	if len(c.Verified()) != 0 || len(changes) != 2 || len(changes[1]) != 0 {
		t.Errorf("verified %v, changes %v", c.Verified(), changes)
	}
	dns.Set("example.org", "agentsite-verify="+peerID)
	now = now.Add(time.Hour)
	c.CheckDue(t.Context())
	if s := c.Statuses()[0]; !s.Verified || s.Failures != 0 || len(changes) != 3 {
		t.Errorf("verified again: %+v, changes %v", s, changes)
	}
}
