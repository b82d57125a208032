package portal_test

import (
	"net/http"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// TestAgentPageNamesCardSigners: the agent page says which node signs
// the A2A card it serves (this node, by its name), and, for an a2a
// backend, which node signed the external agent's own card (the pinned
// signer, named by its heartbeat's node name, else its short peer id).
// A node that signs no cards says nothing.
func TestAgentPageNamesCardSigners(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.NodeName = "node-a" })
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	upstream, _ := peer.IDFromPrivateKey(key)
	in := SimpleInput("tides", "Tides")
	in.Backend = agent.Backend{Kind: agent.BackendA2A, URL: "https://tides.example.org/.well-known/agent-card.json", CardSigner: upstream.String()}
	l := e.SeedAgent("", in)
	echo := e.SeedEcho("plain-echo", "Plain Echo")

	doc := e.Page("/agents/"+l.Record.ID, http.StatusOK)
	if Testid(doc, "card-signer").Length() != 0 || Testid(doc, "upstream-card-signer").Length() == 0 {
		t.Fatalf("unsigned node: card-signer %q, upstream %q", Text(Testid(doc, "card-signer")), Text(Testid(doc, "upstream-card-signer")))
	}

	e.SignCards()
	doc = e.Page("/agents/"+l.Record.ID, http.StatusOK)
	if got := Text(MustTestid(t, doc, "card-signer")); got != "Card signed by node node-a" {
		t.Errorf("card-signer = %q", got)
	}
	if got, want := Text(MustTestid(t, doc, "upstream-card-signer")), "Its own A2A card: Card signed by node "+store.ShortPeerID(upstream.String()); got != want {
		t.Errorf("upstream-card-signer = %q, want %q", got, want)
	}
	e.NameNode(upstream.String(), "tide-host")
	doc = e.Page("/agents/"+l.Record.ID, http.StatusOK)
	if got := Text(MustTestid(t, doc, "upstream-card-signer")); got != "Its own A2A card: Card signed by node tide-host" {
		t.Errorf("named upstream-card-signer = %q", got)
	}
	// Not an a2a backend: only this node's signature.
	doc = e.Page("/agents/"+echo, http.StatusOK)
	if Testid(doc, "upstream-card-signer").Length() != 0 || Text(MustTestid(t, doc, "card-signer")) != "Card signed by node node-a" {
		t.Errorf("echo's page: %q / %q", Text(Testid(doc, "card-signer")), Text(Testid(doc, "upstream-card-signer")))
	}
}
