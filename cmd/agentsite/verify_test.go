package main

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent/verify"
	"github.com/agentsite/agentsite/agent/verify/verifytest"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/p2p"
)

// newNodeKey creates a node key in a fresh data dir (as the node would on
// its first start), so the test knows the peer id before the node runs.
func newNodeKey(t *testing.T) (dir, id string) {
	t.Helper()
	dir = t.TempDir()
	key, _, err := p2p.LoadOrCreateKey(filepath.Join(dir, keyFile))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return dir, pid.String()
}

// TestVerifiedPublishers, end to end: B proves b.example by DNS TXT,
// example.com by HTTPS (a test CA) and c.example by a TXT that only B's
// resolver shows, and its heartbeats claim all three. A proves each
// itself, through its own resolver: it shows b.example and example.com
// beside B's agents (API, ?verified=true, the hub's badge, /nodes), never
// c.example (A's DNS names another peer); when b.example's record goes
// from A's DNS, three failed checks later A no longer shows it, though B
// still claims it.
func TestVerifiedPublishers(t *testing.T) {
	dirB, idB := newNodeKey(t)
	dnsA, dnsB := verifytest.StartDNS(t), verifytest.StartDNS(t)
	for _, d := range []*verifytest.DNS{dnsA, dnsB} {
		d.Set("b.example", "v=spf1 -all", verify.TXTPrefix+idB)
	}
	dnsB.Set("c.example", verify.TXTPrefix+idB)                                                    // what B sees
	dnsA.Set("c.example", verify.TXTPrefix+"12D3KooWGzxzKZYveHXtpG6AsrUJBcWxHBFS2HsEoGTxrMLvKXtf") // what A sees: someone else's

	// The HTTPS proof: httptest's certificate is for example.com, trusted
	// through --verify-ca.
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, _, _ := net.SplitHostPort(r.Host); r.URL.Path != verify.WellKnownPath || host != "example.com" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(verify.WellKnown{PeerIDs: []string{idB}})
	}))
	t.Cleanup(tlsSrv.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsPort := tlsSrv.Listener.Addr().(*net.TCPAddr).Port

	b := startClusterNode(t, nodeOpts{dir: dirB, heartbeat: 500 * time.Millisecond, verifyTLS: tlsPort, extra: []string{
		"--allow-private-endpoints", "--verify-dns-server", dnsB.Addr(), "--verify-ca", caFile, "--verify-every", "1h",
		"--verify-domain", "b.example", "--verify-domain", "c.example", "--verify-domain", "example.com",
	}})
	a := startClusterNode(t, nodeOpts{heartbeat: 500 * time.Millisecond, verifyTLS: tlsPort, bootstrap: []string{b.addr()}, extra: []string{
		"--allow-private-endpoints", "--verify-dns-server", dnsA.Addr(), "--verify-ca", caFile, "--verify-every", "1s",
		"--verify-budget", "1000",
	}})
	agentB := b.register("published-by-b")
	agentA := a.register("published-by-a")

	// B's own view: all three proved, each by its method.
	var node struct {
		Domains []verify.Status `json:"domains"`
	}
	waitfor.Until(t, 30*time.Second, "B to prove its three domains", func() bool {
		_, body := b.api(http.MethodGet, "/api/v1/node", nil)
		if json.Unmarshal(body, &node) != nil || len(node.Domains) != 3 {
			return false
		}
		for _, s := range node.Domains {
			if !s.Verified {
				return false
			}
		}
		return true
	})
	for _, s := range node.Domains {
		want := verify.MethodDNS
		if s.Domain == "example.com" {
			want = verify.MethodHTTPS
		}
		if s.Method != want || s.CheckedAt.IsZero() {
			t.Errorf("B's %s: %+v, want proved by %s", s.Domain, s, want)
		}
	}

	verifiedOnA := func(id string) []string {
		code, body := a.api(http.MethodGet, "/api/v1/agents/"+id, nil)
		var got struct {
			VerifiedDomains []string `json:"verified_domains"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
			return []string{"error"}
		}
		return got.VerifiedDomains
	}
	want := []string{"b.example", "example.com"}
	waitfor.Until(t, 30*time.Second, "A to show B's agent verified for b.example and example.com", func() bool {
		return slices.Equal(verifiedOnA(agentB.ID), want)
	})
	// c.example stays out: A checked it (claimed in the same rounds,
	// queued between the two it proved) and found another peer's id.
	for _, s := range a.m.app.verify.Statuses(idB) {
		if s.Domain == "c.example" && (s.Verified || s.CheckedAt.IsZero() || !strings.Contains(s.LastError, "no "+verify.TXTPrefix+idB)) {
			t.Errorf("A's check of c.example: %+v", s)
		}
	}
	if got := verifiedOnA(agentB.ID); slices.Contains(got, "c.example") {
		t.Errorf("A shows c.example, whose TXT at A names another peer: %v", got)
	}
	if got := verifiedOnA(agentA.ID); len(got) != 0 {
		t.Errorf("A's own agent shows verified domains %v; A claims none", got)
	}

	// ?verified=true lists B's agent, not A's own.
	code, body := a.api(http.MethodGet, "/api/v1/agents?verified=true&limit=100", nil)
	var page struct {
		Agents []struct {
			ID              string   `json:"id"`
			VerifiedDomains []string `json:"verified_domains"`
		} `json:"agents"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &page) != nil {
		t.Fatalf("?verified=true: %d %s", code, body)
	}
	var ids []string
	for _, ag := range page.Agents {
		ids = append(ids, ag.ID)
		if !slices.Equal(ag.VerifiedDomains, want) {
			t.Errorf("?verified=true lists %s with %v", ag.ID, ag.VerifiedDomains)
		}
	}
	if !slices.Contains(ids, agentB.ID) || slices.Contains(ids, agentA.ID) {
		t.Errorf("?verified=true lists %v; want B's %s and not A's %s", ids, agentB.ID, agentA.ID)
	}
	if code, _ := a.api(http.MethodGet, "/api/v1/agents?verified=maybe", nil); code != http.StatusBadRequest {
		t.Errorf("?verified=maybe: %d, want 400", code)
	}

	// ARD's verified filter (handlers/ard's Publishers) finds B's agent,
	// not A's.
	resp, err := http.Post(a.m.HTTPURL()+"/ard/search", "application/json",
		strings.NewReader(`{"query":{"text":"","filter":{"verified":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ardBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(ardBody), agentB.ID) || strings.Contains(string(ardBody), agentA.ID) {
		t.Errorf("ARD search verified:true: %d %s; want B's %s only", resp.StatusCode, ardBody, agentB.ID)
	}

	// The hub: the agent page's badge, the filtered cards, /nodes.
	doc := a.page(t, "/agents/"+agentB.ID)
	badge := doc.Find(`[data-testid="agent-detail"] [data-testid="verified-badge"]`)
	if badge.Length() != 1 || !strings.Contains(badge.Text(), "verified: b.example, example.com") || strings.Contains(badge.Text(), "c.example") {
		t.Errorf("agent page badge: %d, %q", badge.Length(), badge.Text())
	}
	if title, _ := badge.Attr("title"); !strings.Contains(title, "it says who runs the node, not what its agents do") {
		t.Errorf("badge title = %q", title)
	}
	if n := a.page(t, "/agents/"+agentA.ID).Find(`[data-testid="verified-badge"]`).Length(); n != 0 {
		t.Errorf("A's own unverified agent shows %d badges", n)
	}
	cards := a.page(t, "/agents?verified=true")
	var cardIDs []string
	cards.Find(`[data-testid="agent-card"]`).Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("data-agent-id")
		cardIDs = append(cardIDs, id)
		if s.Find(`[data-testid="verified-badge"]`).Length() != 1 {
			t.Errorf("card %s has no badge", id)
		}
	})
	if !slices.Equal(cardIDs, []string{agentB.ID}) {
		t.Errorf("hub, verified publishers only: cards %v, want [%s]", cardIDs, agentB.ID)
	}
	if sel := cards.Find(`[data-testid="verified-filter"] option[selected]`); sel.AttrOr("value", "") != "true" {
		t.Errorf("the filter does not show itself selected: %q", sel.Text())
	}
	row := a.page(t, "/nodes").Find(`[data-testid="node-row"][data-peer-id="` + idB + `"] [data-testid="verified-badge"]`)
	if row.AttrOr("data-domains", "") != "b.example example.com" {
		t.Errorf("/nodes: B's row badge %q", row.AttrOr("data-domains", ""))
	}

	// b.example's record goes from A's DNS (B still proves and claims it):
	// three failed checks later A no longer shows it.
	dnsA.Set("b.example")
	waitfor.Until(t, 60*time.Second, "A to unverify b.example", func() bool {
		return slices.Equal(verifiedOnA(agentB.ID), []string{"example.com"})
	})
	st := a.m.app.verify.Statuses(idB)
	for _, s := range st {
		if s.Domain == "b.example" && (s.Verified || s.Failures < verify.DefaultMaxFailures) {
			t.Errorf("A's b.example after unverifying: %+v", s)
		}
	}
	_, body = b.api(http.MethodGet, "/api/v1/node", nil)
	if !strings.Contains(string(body), `"domain":"b.example","verified":true`) {
		t.Errorf("B no longer proves b.example itself: %s", body)
	}
}

// page GETs a portal page of n and parses it.
func (n *clusterNode) page(t *testing.T, path string) *goquery.Document {
	t.Helper()
	resp, err := http.Get(n.m.HTTPURL() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// The --verify-* flags and their environment twins: good values are
// taken, each bad one refused with what to give instead.
func TestVerifyFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENTSITE_VERIFY_DOMAIN": "a.example,B.Example.", "AGENTSITE_VERIFY_DNS_SERVER": "127.0.0.1:5353"}
	var c Config
	if err := c.Parse([]string{"--data-dir", dir, "--verify-every", "1h"}, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Verify.Domains, []string{"a.example", "B.Example."}) || c.Verify.Every != time.Hour || c.Verify.DNSServer != "127.0.0.1:5353" || c.Verify.Budget != verify.DefaultPerMinute {
		t.Errorf("parsed %+v", c.Verify)
	}
	var tr Config
	if err := tr.Parse([]string{"--data-dir", dir, "--trusted-only", "--trust-domain", "Example.ORG"}, func(string) string { return "" }, io.Discard); err != nil {
		t.Errorf("--trusted-only with a --trust-domain: %v", err)
	} else if adm := tr.admission(); !slices.Equal(adm.TrustDomains, []string{"example.org"}) || !adm.TrustedOnly {
		t.Errorf("admission from the flags: %+v", adm)
	}
	var d Config
	if err := d.Parse([]string{"--data-dir", dir}, func(string) string { return "" }, io.Discard); err != nil || d.Verify.Every != verify.DefaultEvery || len(d.Verify.Domains) != 0 {
		t.Errorf("defaults: %+v, %v", d.Verify, err)
	}
	many := []string{"--data-dir", dir}
	for i := range verify.MaxDomains + 1 {
		many = append(many, "--verify-domain", string(rune('a'+i))+".example")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--verify-domain", "localhost"}, "give a name like example.org"},
		{[]string{"--verify-domain", "a.example", "--verify-domain", "A.example"}, "given twice"},
		{many[2:], "at most 8 domains"},
		{[]string{"--verify-every", "10ms"}, "--verify-every must be between 1s and 168h"},
		{[]string{"--verify-dns-server", "127.0.0.1"}, "must be host:port"},
		{[]string{"--verify-ca", filepath.Join(dir, "missing.pem")}, "--verify-ca: read"},
		{[]string{"--verify-ca", notPEM}, "holds no PEM certificate"},
		{[]string{"--verify-budget", "-1"}, "--verify-budget must be between 0 and 100000"},
		{[]string{"--trust-domain", "org"}, "--trust-domain: "},
		{[]string{"--trust-domain", "example.org", "--verify-budget", "0"}, "--trust-domain needs --verify-budget above 0"},
	} {
		var c Config
		err := c.Parse(append([]string{"--data-dir", dir}, tc.args...), func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
