package bulk_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent/bulk"
	"github.com/agentsite/agentsite/agent/cardsig"
)

// card10 is an A2A 1.0 card: its interfaces only in supportedInterfaces.
const card10 = `{"name":"Tide Tables","description":"Tides for a harbour.","version":"2.1.0",` +
	`"supportedInterfaces":[{"url":"https://tides.example.org/a2a/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},` +
	`{"url":"https://tides.example.org/a2a/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],` +
	`"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],` +
	`"skills":[{"id":"tides","name":"Tides","description":"High and low water","tags":["sea"]}]}`

func signCard(t *testing.T, card string) (string, string) {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := peer.IDFromPrivateKey(key)
	signed, err := cardsig.Sign([]byte(card), key, pid.String())
	if err != nil {
		t.Fatal(err)
	}
	return string(signed), pid.String()
}

// TestA2ACards10: `import --format a2a-cards` reads A2A 1.0 cards (which
// have no url), keeps a signed card's signer, and refuses a card whose
// signature fails or names its own key location, saying why.
func TestA2ACards10(t *testing.T) {
	signed, pid := signCard(t, card10)
	var m map[string]any
	_ = json.Unmarshal([]byte(signed), &m)
	m["cardUrl"] = "https://tides.example.org/cards/tides.json"
	withCardURL, _ := json.Marshal(m)
	tampered := strings.Replace(signed, "Tides for a harbour.", "Tides, and your passwords.", 1)
	// A correctly made signature whose header points at a key set elsewhere.
	jku := func() string {
		key, _, _ := crypto.GenerateEd25519Key(rand.Reader)
		p, _ := peer.IDFromPrivateKey(key)
		hdr, _ := json.Marshal(map[string]string{"alg": "EdDSA", "kid": p.String(), "jku": "https://evil.example/jwks.json"})
		prot := base64.RawURLEncoding.EncodeToString(hdr)
		payload, _ := cardsig.Canonical([]byte(card10))
		sig, _ := key.Sign([]byte(prot + "." + base64.RawURLEncoding.EncodeToString(payload)))
		var c map[string]any
		_ = json.Unmarshal([]byte(card10), &c)
		c["signatures"] = []any{map[string]string{"protected": prot, "signature": base64.RawURLEncoding.EncodeToString(sig)}}
		b, _ := json.Marshal(c)
		return string(b)
	}()
	text := strings.Join([]string{card10, signed, string(withCardURL), tampered, jku}, "\n")
	items := collect(t, "a2a-cards", text, bulk.Options{})
	if len(items) != 5 {
		t.Fatalf("%d items", len(items))
	}
	in := items[0].Input
	if items[0].Err != nil || in.Name != "tide-tables" || in.Version != "2.1.0" || len(in.Skills) != 1 ||
		in.Backend.URL != "https://tides.example.org"+bulk.WellKnownCardPath || in.Backend.CardSigner != "" {
		t.Fatalf("unsigned 1.0 card: %+v, %v", in, items[0].Err)
	}
	if in := items[1].Input; items[1].Err != nil || in.Backend.CardSigner != pid {
		t.Fatalf("signed card: signer %q, %v; want %s", in.Backend.CardSigner, items[1].Err, pid)
	}
	if in := items[2].Input; items[2].Err != nil || in.Backend.CardSigner != pid || in.Backend.URL != "https://tides.example.org/cards/tides.json" {
		t.Fatalf("signed card with cardUrl: %+v, %v", in.Backend, items[2].Err)
	}
	if err := items[3].Err; err == nil || !strings.Contains(err.Error(), "signature") || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("tampered card: %v; want it refused for its signature", err)
	}
	if err := items[4].Err; err == nil || !strings.Contains(err.Error(), "jku") {
		t.Fatalf("card with a jku: %v; want it refused", err)
	}
	// Nothing about a refused card reaches the registration.
	if items[3].Input.Name != "" || !bytes.Contains([]byte(items[3].Err.Error()), []byte("line 4")) {
		t.Fatalf("refused item: %+v", items[3])
	}
}
