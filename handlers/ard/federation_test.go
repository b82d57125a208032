package ard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// newPeer is a fresh node identity.
func newPeer(t *testing.T) (crypto.PrivKey, string) {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, pid.String()
}

// seedRemote stores a listing of a fresh node tagged tags whose row
// changed at updated, as the Sink files one from the network.
func seedRemote(t *testing.T, st store.Store, name string, updated time.Time, tags ...string) store.Listing {
	t.Helper()
	key, pid := newPeer(t)
	now := time.Now()
	r := agent.Record{
		Name: name, DisplayName: name, Description: "A remote " + name, Tags: tags,
		Version: "1.0.0", Seq: 1, IssuedAt: now.Add(-time.Minute),
		Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: pid, Protocol: agent.MCPProtocol}},
	}
	r.ExpiresAt = r.IssuedAt.Add(agent.DefaultTTL)
	env, err := agent.Seal(&r, key, now)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := agent.Open(env, now)
	if err != nil {
		t.Fatal(err)
	}
	l := store.Listing{Record: *rec, Envelope: env, Status: store.StatusOnline, LastSeen: now,
		HostPeerID: rec.HostPeerID(), UpdatedAt: updated}
	if err := st.UpsertRecord(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	return l
}

// pullNet is a DHT whose tag look-up pulls its listings into the store
// during the round, once.
type pullNet struct {
	t      *testing.T
	st     store.Store
	n      int
	once   sync.Once
	pulled map[string]bool
}

func (p *pullNet) SearchTag(_ context.Context, tag string, _ int) (int, int, error) {
	p.once.Do(func() {
		p.pulled = map[string]bool{}
		for i := range p.n {
			l := seedRemote(p.t, p.st, fmt.Sprintf("dht-%s-%d", tag, i), time.Now(), tag)
			p.pulled[l.Record.ID] = true
		}
	})
	return 1, p.n, nil
}

func (p *pullNet) PeerCount() int { return 1 }

// mirrorOnly is the searches of a node without a network.
func mirrorOnly(c discover.Catalogue) *discover.Discover {
	return discover.New(discover.Deps{Catalogue: c})
}

// registry serves h's POST /search alone.
func registry(t *testing.T, h *ard.Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ard/search", h.Search)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func post(t *testing.T, ts *httptest.Server, body map[string]any) (ard.SearchResponse, http.Header) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(ts.URL+"/ard/search", "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	handlertest.WantStatus(t, resp, http.StatusOK)
	return handlertest.Decode[ard.SearchResponse](t, resp), resp.Header
}

// A federated search followed page by page to its end yields each
// listing once, the mirror's and those its DHT round pulled in, and every
// page (not only the first) marks what the round brought and says it
// continues a federated search; a listing that reaches the mirror in the
// middle of the walk does not make it show another twice.
func TestFederatedPagesYieldEachListingOnce(t *testing.T) {
	env := handlertest.New(t)
	before := time.Now().Add(-time.Minute)
	mirror := map[string]bool{}
	for i := range 3 {
		mirror[seedRemote(t, env.Store, fmt.Sprintf("mirror-tides-%d", i), before, "tides").Record.ID] = true
	}
	seedRemote(t, env.Store, "weather-bot", before, "weather")
	net := &pullNet{t: t, st: env.Store, n: 4}
	ts := registry(t, ard.New(discover.New(discover.Deps{Catalogue: env.Store, Network: net}), env.Store, net, "", nil))

	body := map[string]any{"query": map[string]any{"text": "", "filter": map[string]any{"tags": []string{"tides"}}},
		"federate": true, "pageSize": 2}
	seen := map[string]int{}
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("the walk does not end")
		}
		got, hdr := post(t, ts, body)
		fed := hdr.Get("AgentSite-Federation")
		switch {
		case page == 0 && !strings.Contains(fed, "federated=?1"):
			t.Errorf("first page: AgentSite-Federation = %s", fed)
		case page > 0 && (!strings.Contains(fed, "continues=?1") || strings.Contains(fed, "only a first page")):
			t.Errorf("page %d: AgentSite-Federation = %s", page+1, fed)
		}
		for _, r := range got.Results {
			id := r.Metadata["agentsite.id"].(string)
			seen[id]++
			want := ard.ViaMirror
			if net.pulled[id] {
				want = ard.ViaDHT
			}
			if r.Metadata["agentsite.via"] != want {
				t.Errorf("page %d: %s via %v, want %s", page+1, r.DisplayName, r.Metadata["agentsite.via"], want)
			}
		}
		if page == 0 {
			// Gossip brings another while the client reads: a newer
			// listing sorts before the cursor, so it is not this walk's.
			seedRemote(t, env.Store, "late-tides", time.Now(), "tides")
		}
		if got.PageToken == "" {
			break
		}
		body["pageToken"] = got.PageToken
	}
	if len(seen) != len(mirror)+net.n {
		t.Errorf("the walk showed %d listings, want %d: %v", len(seen), len(mirror)+net.n, seen)
	}
	for id, n := range seen {
		if n != 1 || (!mirror[id] && !net.pulled[id]) {
			t.Errorf("%s shown %d times (mirror %v, dht %v)", id, n, mirror[id], net.pulled[id])
		}
	}

	// A token this registry did not make is refused.
	raw, _ := json.Marshal(map[string]any{"query": map[string]any{"text": ""}, "pageToken": "fed.bm9wZQ"})
	resp, err := http.Post(ts.URL+"/ard/search", "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	handlertest.WantStatus(t, resp, http.StatusBadRequest)
}

// Federation "referrals": the answer is the mirror's, with at most
// MaxReferrals referrals in the spec's RegistryReferral shape to the
// registries of the online nodes this node hears that announce an HTTP
// address, the hosts of the page's listings first; never this node, never
// an offline one, never one without an HTTP address; a node reached at a
// public address refers to public addresses only; with none the header
// says why.
func TestReferrals(t *testing.T) {
	env := handlertest.New(t)
	ctx := context.Background()
	hosted := seedRemote(t, env.Store, "tide-bot", time.Now(), "tides")
	_, self := newPeer(t)
	node := func(pid, status string, addrs ...string) {
		t.Helper()
		n := store.Node{PeerID: pid, Name: "node-" + pid[len(pid)-4:], Version: "test", LastHeartbeat: time.Now(), Status: status, AgentsHosted: 1}
		for _, a := range addrs {
			n.Addrs = append(n.Addrs, a+"/p2p/"+pid)
		}
		if err := env.Store.UpsertNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	h := ard.New(mirrorOnly(env.Store), env.Store, nil, "", nil)
	h.Nodes, h.Self = env.Store, self
	ts := registry(t, h)
	tides := map[string]any{"query": map[string]any{"text": "", "filter": map[string]any{"tags": []string{"tides"}}}, "federation": "referrals"}

	got, hdr := post(t, ts, tides)
	if len(got.Results) != 1 || got.Referrals == nil || len(got.Referrals) != 0 ||
		!strings.Contains(hdr.Get("AgentSite-Federation"), "referrals=0") || !strings.Contains(hdr.Get("AgentSite-Federation"), "hears no other online node") {
		t.Fatalf("no nodes: %+v, %s", got, hdr.Get("AgentSite-Federation"))
	}

	node(self, store.StatusOnline, "/ip4/127.0.0.1/tcp/9000/http")
	_, off := newPeer(t)
	node(off, store.StatusOffline, "/ip4/127.0.0.1/tcp/9001/http")
	_, bare := newPeer(t)
	node(bare, store.StatusOnline, "/ip4/127.0.0.1/tcp/4001")
	got, hdr = post(t, ts, tides)
	if len(got.Referrals) != 0 || !strings.Contains(hdr.Get("AgentSite-Federation"), "announces an HTTP address") {
		t.Fatalf("only self, offline and bare nodes: %+v, %s", got.Referrals, hdr.Get("AgentSite-Federation"))
	}

	var others []string
	for i := range ard.MaxReferrals + 2 {
		_, pid := newPeer(t)
		others = append(others, pid)
		node(pid, store.StatusOnline, "/ip4/127.0.0.1/tcp/4001", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", 9100+i))
	}
	_, public := newPeer(t)
	node(public, store.StatusOnline, "/dns4/peer.example.org/tcp/443/tls/http")
	node(hosted.HostPeerID, store.StatusOnline, "/ip4/127.0.0.1/tcp/9500/http", "/dns4/host.example.org/tcp/8443/tls/sni/host.example.org/http")

	got, hdr = post(t, ts, tides)
	if len(got.Results) != 1 || len(got.Referrals) != ard.MaxReferrals || !strings.Contains(hdr.Get("AgentSite-Federation"), fmt.Sprintf("referrals=%d", ard.MaxReferrals)) {
		t.Fatalf("results %d, referrals %d (want %d), %s", len(got.Results), len(got.Referrals), ard.MaxReferrals, hdr.Get("AgentSite-Federation"))
	}
	if r := got.Referrals[0]; r.URL != "https://host.example.org:8443/ard/search" ||
		r.Identifier != ard.URNIn(hosted.HostPeerID, ard.NamespaceRegistry, "ard") {
		t.Errorf("the host of the page's listing first, at its https address: %+v", r)
	}
	ids := map[string]bool{}
	for _, r := range got.Referrals {
		pid := strings.TrimSuffix(strings.TrimPrefix(r.Identifier, "urn:air:"), ":registry:ard")
		if ids[pid] || pid == self || pid == off || pid == bare {
			t.Errorf("referral %+v: repeated, self, offline or without HTTP", r)
		}
		ids[pid] = true
		if r.Type != ard.TypeRegistry || !strings.HasSuffix(r.DisplayName, " registry") || !strings.HasSuffix(r.URL, "/ard/search") {
			t.Errorf("referral shape: %+v", r)
		}
	}

	// Reached at a public address, the node refers to public ones only.
	pub := ard.New(mirrorOnly(env.Store), env.Store, nil, "https://hub.example.org", nil)
	pub.Nodes, pub.Self = env.Store, self
	got, _ = post(t, registry(t, pub), tides)
	urls := map[string]bool{}
	for _, r := range got.Referrals {
		urls[r.URL] = true
	}
	if len(got.Referrals) != 2 || !urls["https://host.example.org:8443/ard/search"] || !urls["https://peer.example.org/ard/search"] {
		t.Errorf("public referrals: %+v", got.Referrals)
	}
}
