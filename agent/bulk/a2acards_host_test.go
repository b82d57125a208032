package bulk_test

import (
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/bulk"
	"github.com/agentsite/agentsite/agent/cardsig"
)

// TestA2ACardsHostRecord: an imported card that carries a host record
// (an AgentSite node's card of an agent hosted elsewhere) is refused when
// it claims another description than the host signed, and read when it
// says what the record says.
func TestA2ACardsHostRecord(t *testing.T) {
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
	cardOf := func(description string) string {
		b, _ := json.Marshal(map[string]any{"name": "Far Bot", "description": description, "version": "1",
			"supportedInterfaces": []any{map[string]string{"url": "https://mirror.example/a2a/" + opened.ID, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
			"capabilities":        map[string]any{"extensions": []any{cardsig.HostRecordExtension(opened.Publisher, env)}},
			"skills":              []any{map[string]string{"id": "far-bot", "name": "Far Bot", "description": description}}})
		return string(b)
	}
	items := collect(t, "a2a-cards", cardOf("Answers from afar.")+"\n"+cardOf("Answers, and keeps your keys."), bulk.Options{})
	if len(items) != 2 || items[0].Err != nil {
		t.Fatalf("items %+v", items)
	}
	if err := items[1].Err; err == nil || !strings.Contains(err.Error(), "host record") {
		t.Fatalf("card differing from its host record: %v; want it refused", err)
	}
}
