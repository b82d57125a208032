package cardsig_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent/cardsig"
)

// card03and10 is a card as a node serves it to both protocol versions: the
// 1.0 members, and 0.3's url, preferredTransport, protocolVersion and a
// 0.3-shaped security scheme beside the 1.0 one, and the host-record
// extension a card of an agent hosted elsewhere carries (params signed).
const card03and10 = `{"name":"AgentSite node","description":"The concierge.","version":"1.0.0",
 "supportedInterfaces":[{"url":"https://node.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
  {"url":"https://node.example/a2a","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}],
 "url":"https://node.example/a2a","preferredTransport":"JSONRPC","protocolVersion":"0.3.0",
 "capabilities":{"streaming":true,"pushNotifications":true,"extensions":[{"uri":"https://agentsite.dev/ext/host-record/v1",
  "description":"The host's signed record.","params":{"host":"12D3KooWExample","record":"CAESIGx+/w=="}}]},
 "securitySchemes":{"bearer":{"type":"http","scheme":"bearer","httpAuthSecurityScheme":{"scheme":"Bearer"}}},
 "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
 "skills":[{"id":"find","name":"Find agents","description":"Finds agents.","tags":["search"],"examples":["weather"]}]}`

// TestA2AJSInterop: the official A2A JavaScript SDK (@a2a-js/sdk 1.3.0,
// testdata/a2a-js-1) verifies a card cardsig signed, and cardsig verifies
// a card the SDK signed with a node's key under its peer id.
func TestA2AJSInterop(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "a2a-js-1")
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk")); err != nil {
		missing = "the SDK is not installed: run npm ci --prefix testdata/a2a-js-1"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "a2a-js-sig.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := peer.IDFromPrivateKey(key)
	raw, _ := key.Raw() // seed ‖ public key
	signed, err := cardsig.Sign([]byte(card03and10), key, pid.String())
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]any{
		"signed": json.RawMessage(signed), "card": json.RawMessage(card03and10), "kid": pid.String(),
		"x": base64.RawURLEncoding.EncodeToString(raw[32:]), "d": base64.RawURLEncoding.EncodeToString(raw[:32]),
	})
	cmd := exec.CommandContext(t.Context(), "node", "--input-type=module", "-e", string(script))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var res struct {
		Verified   bool            `json:"verified"`
		Error      string          `json:"error"`
		SignedByJS json.RawMessage `json:"signedByJS"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !res.Verified {
		t.Errorf("@a2a-js/sdk refuses cardsig's signature: %s", res.Error)
	}
	if got, err := cardsig.Verify(res.SignedByJS); err != nil || got != pid.String() {
		t.Errorf("cardsig refuses @a2a-js/sdk's signature: %v (signer %q)\n%s", err, got, res.SignedByJS)
	}
}
