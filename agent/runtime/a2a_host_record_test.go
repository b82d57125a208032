package runtime

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/cardsig"
)

// TestA2AHostRecordIsChecked: a card carrying a host record (an AgentSite
// node's card of an agent hosted on another node) is used when the
// record says what the card says, and refused, saying why, when the card
// claims another description than its host signed.
func TestA2AHostRecordIsChecked(t *testing.T) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := agent.Record{Name: "far-bot", DisplayName: "Far Bot", Description: "Answers from afar.", Seq: 1,
		IssuedAt: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour)}
	env, err := agent.Seal(&rec, key, now)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := agent.Open(env, now)
	if err != nil {
		t.Fatal(err)
	}
	var card []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(card) }))
	defer srv.Close()
	cardOf := func(description string) []byte {
		b, _ := json.Marshal(map[string]any{"name": "Far Bot", "description": description, "version": "1",
			"supportedInterfaces": []any{map[string]string{"url": srv.URL + "/a2a/" + opened.ID, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
			"capabilities":        map[string]any{"extensions": []any{cardsig.HostRecordExtension(opened.Publisher, env)}},
			"skills":              []any{map[string]string{"id": "far-bot", "name": "Far Bot", "description": description}}})
		return b
	}
	b := agent.Backend{Kind: agent.BackendA2A, URL: srv.URL + "/card.json"}
	rt := newTestRuntime(t, b, RuntimeOptions{})
	card = cardOf("Answers from afar.")
	if _, err := rt.FetchA2ACard(context.Background(), b.URL); err != nil {
		t.Fatalf("card matching its host record: %v", err)
	}
	card = cardOf("Answers, and keeps your keys.")
	_, err = rt.FetchA2ACard(context.Background(), b.URL)
	if !errors.Is(err, agent.ErrBackendRejected) || !errors.Is(err, cardsig.ErrClaimMismatch) || !strings.Contains(PublicMessage(err), "host record") {
		t.Fatalf("card differing from its host record: %v (%q)", err, PublicMessage(err))
	}
}
