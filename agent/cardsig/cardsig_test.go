package cardsig_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent/cardsig"
)

const card10 = `{
  "name": "Echo <agent>",
  "description": "Repeats what you say — «quoted»",
  "version": "1.0.0",
  "supportedInterfaces": [
    {"url": "https://node.example/a2a/echo", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
    {"url": "https://node.example/a2a/echo", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
  ],
  "capabilities": {"streaming": true},
  "defaultInputModes": ["text/plain"],
  "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "echo", "name": "Echo", "description": "echo", "tags": ["test"]}]
}`

func newKey(t *testing.T) (crypto.PrivKey, string) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, pid.String()
}

func TestSignVerifyRoundTrip(t *testing.T) {
	key, pid := newKey(t)
	signed, err := cardsig.Sign([]byte(card10), key, pid)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cardsig.Verify(signed)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got != pid {
		t.Fatalf("signer %s, want %s", got, pid)
	}
	// The card's own fields survive signing.
	var c map[string]any
	if err := json.Unmarshal(signed, &c); err != nil {
		t.Fatal(err)
	}
	if c["name"] != "Echo <agent>" || len(c["signatures"].([]any)) != 1 {
		t.Fatalf("signed card: %s", signed)
	}
	// Re-encoding (indentation, member order, empty members an SDK
	// writes out) does not change what was signed.
	var generic map[string]any
	_ = json.Unmarshal(signed, &generic)
	generic["iconUrl"] = ""
	generic["securitySchemes"] = map[string]any{}
	re, _ := json.MarshalIndent(generic, "", "    ")
	if got, err := cardsig.Verify(re); err != nil || got != pid {
		t.Fatalf("re-encoded card: %v %s", err, got)
	}
	// Signing again by the same node replaces its signature; another
	// node's signature is kept and both verify.
	again, err := cardsig.Sign(signed, key, pid)
	if err != nil {
		t.Fatal(err)
	}
	other, otherPID := newKey(t)
	both, err := cardsig.Sign(again, other, otherPID)
	if err != nil {
		t.Fatal(err)
	}
	var cc struct{ Signatures []cardsig.Signature }
	_ = json.Unmarshal(both, &cc)
	if len(cc.Signatures) != 2 {
		t.Fatalf("want 2 signatures, got %d", len(cc.Signatures))
	}
	if got, err := cardsig.Verify(both); err != nil || got != pid {
		t.Fatalf("two signers: %v %s", err, got)
	}
}

func TestSignWrongPeerID(t *testing.T) {
	key, _ := newKey(t)
	_, other := newKey(t)
	if _, err := cardsig.Sign([]byte(card10), key, other); err == nil {
		t.Fatal("Sign accepted a peer id that is not the key's")
	}
}

func TestVerifyUnsigned(t *testing.T) {
	if _, err := cardsig.Verify([]byte(card10)); !errors.Is(err, cardsig.ErrUnsigned) {
		t.Fatalf("want ErrUnsigned, got %v", err)
	}
}

func TestVerifyTamperedCard(t *testing.T) {
	key, pid := newKey(t)
	signed, err := cardsig.Sign([]byte(card10), key, pid)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(map[string]any){
		"url moved": func(c map[string]any) {
			c["supportedInterfaces"].([]any)[0].(map[string]any)["url"] = "https://evil.example/a2a"
		},
		"field added":   func(c map[string]any) { c["provider"] = map[string]any{"organization": "Evil"} },
		"skill removed": func(c map[string]any) { c["skills"] = []any{map[string]any{"id": "x", "name": "x"}} },
		"name changed":  func(c map[string]any) { c["name"] = "Echo <agent> " },
	} {
		var c map[string]any
		_ = json.Unmarshal(signed, &c)
		edit(c)
		b, _ := json.Marshal(c)
		if _, err := cardsig.Verify(b); !errors.Is(err, cardsig.ErrTampered) {
			t.Errorf("%s: want ErrTampered, got %v", name, err)
		}
	}
	// A signature lifted onto another node's card under its own kid.
	key2, pid2 := newKey(t)
	signed2, _ := cardsig.Sign([]byte(card10), key2, pid2)
	var c, c2 map[string]any
	_ = json.Unmarshal(signed, &c)
	_ = json.Unmarshal(signed2, &c2)
	sig := c2["signatures"].([]any)[0].(map[string]any)
	sig["protected"] = c["signatures"].([]any)[0].(map[string]any)["protected"]
	b, _ := json.Marshal(c2)
	if _, err := cardsig.Verify(b); !errors.Is(err, cardsig.ErrTampered) {
		t.Errorf("swapped kid: want ErrTampered, got %v", err)
	}
}

// forge builds a signature with an arbitrary protected header, signed
// correctly by key, so only the header decides the outcome.
func forge(t *testing.T, key crypto.PrivKey, hdr map[string]any, unprotected map[string]any) []byte {
	t.Helper()
	prot, _ := json.Marshal(hdr)
	p := base64.RawURLEncoding.EncodeToString(prot)
	payload, err := cardsig.Canonical([]byte(card10))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := key.Sign([]byte(p + "." + base64.RawURLEncoding.EncodeToString(payload)))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	_ = json.Unmarshal([]byte(card10), &c)
	s := map[string]any{"protected": p, "signature": base64.RawURLEncoding.EncodeToString(sig)}
	if unprotected != nil {
		s["header"] = unprotected
	}
	c["signatures"] = []any{s}
	b, _ := json.Marshal(c)
	return b
}

func TestVerifyRefusesSignerSuppliedKeys(t *testing.T) {
	key, pid := newKey(t)
	// A correct signature whose header also points at a key set elsewhere:
	// refused, and nothing is fetched (there is no network here to fetch).
	for name, tc := range map[string]struct{ prot, unprot map[string]any }{
		"jku protected":   {map[string]any{"alg": "EdDSA", "kid": pid, "jku": "https://evil.example/jwks.json"}, nil},
		"jku unprotected": {map[string]any{"alg": "EdDSA", "kid": pid}, map[string]any{"jku": "https://evil.example/jwks.json"}},
		"jwk embedded":    {map[string]any{"alg": "EdDSA", "kid": pid, "jwk": map[string]any{"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}}, nil},
		"x5u":             {map[string]any{"alg": "EdDSA", "kid": pid, "x5u": "https://evil.example/cert.pem"}, nil},
	} {
		_, err := cardsig.Verify(forge(t, key, tc.prot, tc.unprot))
		if !errors.Is(err, cardsig.ErrForeignKey) {
			t.Errorf("%s: want ErrForeignKey, got %v", name, err)
		}
	}
	// The same header without jku verifies, so it is the jku that refuses.
	if got, err := cardsig.Verify(forge(t, key, map[string]any{"alg": "EdDSA", "kid": pid}, nil)); err != nil || got != pid {
		t.Fatalf("control: %v", err)
	}
}

func TestVerifyRefusesOtherAlgsAndKids(t *testing.T) {
	key, pid := newKey(t)
	for name, tc := range map[string]struct {
		hdr  map[string]any
		want error
	}{
		"RS256":          {map[string]any{"alg": "RS256", "kid": pid}, cardsig.ErrUnknownAlg},
		"none":           {map[string]any{"alg": "none", "kid": pid}, cardsig.ErrUnknownAlg},
		"no alg":         {map[string]any{"kid": pid}, cardsig.ErrUnknownAlg},
		"kid not a peer": {map[string]any{"alg": "EdDSA", "kid": "key-1"}, cardsig.ErrBadKeyID},
		"crit":           {map[string]any{"alg": "EdDSA", "kid": pid, "crit": []string{"b64"}, "b64": false}, cardsig.ErrMalformed},
	} {
		if _, err := cardsig.Verify(forge(t, key, tc.hdr, nil)); !errors.Is(err, tc.want) {
			t.Errorf("%s: want %v, got %v", name, tc.want, err)
		}
	}
	// A secp256k1 peer id cannot sign EdDSA.
	k, _, _ := crypto.GenerateSecp256k1Key(rand.Reader)
	spid, _ := peer.IDFromPrivateKey(k)
	if _, err := cardsig.Verify(forge(t, key, map[string]any{"alg": "EdDSA", "kid": spid.String()}, nil)); !errors.Is(err, cardsig.ErrBadKeyID) {
		t.Errorf("secp256k1 kid: got %v", err)
	}
}

func TestVerifyMalformed(t *testing.T) {
	for name, card := range map[string]string{
		"not json":        `{"name":`,
		"array":           `[1,2]`,
		"duplicate names": `{"name":"a","name":"b","signatures":[]}`,
		"signatures obj":  `{"name":"a","signatures":{"protected":"x"}}`,
		"bad base64":      `{"name":"a","signatures":[{"protected":"!!","signature":"x"}]}`,
	} {
		if _, err := cardsig.Verify([]byte(card)); !errors.Is(err, cardsig.ErrMalformed) {
			t.Errorf("%s: want ErrMalformed, got %v", name, err)
		}
	}
	big := `{"name":"` + strings.Repeat("a", cardsig.MaxCardBytes) + `"}`
	if _, err := cardsig.Verify([]byte(big)); !errors.Is(err, cardsig.ErrTooLarge) {
		t.Errorf("big card: %v", err)
	}
}

// TestEd25519KeyFromStdlib: a node key held as a standard library
// ed25519.PrivateKey signs through libp2p's wrapper.
func TestEd25519KeyFromStdlib(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	key, err := crypto.UnmarshalEd25519PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := peer.IDFromPrivateKey(key)
	signed, err := cardsig.Sign([]byte(card10), key, pid.String())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cardsig.Verify(signed); err != nil || got != pid.String() {
		t.Fatal(err)
	}
}

// TestCanonicalRFC8785 runs the examples of RFC 8785 (sections 3.2.2 and
// 3.2.3, and number serializations of Appendix B) through the JCS step of
// Canonical.
func TestCanonicalRFC8785(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		// RFC 8785 3.2.2 (members with empty values would be pruned; this one has none).
		"3.2.2": {
			`{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		// RFC 8785 3.2.3: sorting by UTF-16 code units.
		"3.2.3": {
			`{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		// Appendix B.
		"numbers": {
			`{"a":[0, -0, 5e-324, 1.7976931348623157e308, 9007199254740992, 9007199254740994, 295147905179352830000, 9.999999999999997e22, 1e23, 1.0000000000000001e23, 0.000001, 0.0000001, 1e21, 999999999999999900000]}`,
			`{"a":[0,0,5e-324,1.7976931348623157e+308,9007199254740992,9007199254740994,295147905179352830000,9.999999999999997e+22,1e+23,1.0000000000000001e+23,0.000001,1e-7,1e+21,999999999999999900000]}`,
		},
	} {
		got, err := cardsig.JCS([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, tc.want)
		}
	}
}

// TestCanonicalCardSchema: the signed form keeps the members of A2A 1.0's
// AgentCard (snake_case names read as camelCase), drops what the schema
// does not define (0.3's url, preferredTransport; a 0.3 security scheme's
// type), a non-optional false, and every empty value, in objects and
// arrays, as @a2a-js/sdk 1.3.0 does.
func TestCanonicalCardSchema(t *testing.T) {
	in := `{"name":"x","url":"https://old.example/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3.0",
		"default_input_modes":["text/plain"],"signatures":[{"protected":"e30","signature":"AA"}],
		"capabilities":{"streaming":false,"extensions":[{"uri":"urn:x","required":false,"params":{"a":"","b":[1,{}]}},{"uri":""}]},
		"securitySchemes":{"bearer":{"type":"http","scheme":"bearer","httpAuthSecurityScheme":{"scheme":"Bearer"}},"none":{}},
		"skills":[{"id":"a","tags":["","t"],"examples":[],"extra":"dropped"}],"iconUrl":""}`
	want := `{"capabilities":{"extensions":[{"params":{"b":[1]},"uri":"urn:x"}],"streaming":false},"defaultInputModes":["text/plain"],` +
		`"name":"x","securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer"}}},"skills":[{"id":"a","tags":["t"]}]}`
	got, err := cardsig.Canonical([]byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("Canonical:\n got %s %v\nwant %s", got, err, want)
	}
	// So a 0.3 member is not covered by a signature: a reader of a signed
	// card uses the 1.0 members only.
	key, pid := newKey(t)
	unsigned := strings.Replace(in, `"signatures":[{"protected":"e30","signature":"AA"}],`, "", 1)
	signed, err := cardsig.Sign([]byte(unsigned), key, pid)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(signed), "https://old.example/rpc", "https://elsewhere.example/rpc", 1)
	if got, err := cardsig.Verify([]byte(moved)); err != nil || got != pid {
		t.Fatalf("a changed 0.3 url: %v; want the signature to stand (it does not cover it)", err)
	}
}

// TestSignDocument: a document that is not a card (a trust manifest) is
// signed whole: any member changed is tampering.
func TestSignDocument(t *testing.T) {
	key, pid := newKey(t)
	doc := `{"identity":"did:key:z6Mk","identityType":"did","attestations":[{"type":"domain","uri":"https://a.example"}]}`
	signed, err := cardsig.SignDocument([]byte(doc), key, pid)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cardsig.VerifyDocument(signed); err != nil || got != pid {
		t.Fatalf("VerifyDocument: %v %s", err, got)
	}
	changed := strings.Replace(string(signed), "https://a.example", "https://b.example", 1)
	if _, err := cardsig.VerifyDocument([]byte(changed)); !errors.Is(err, cardsig.ErrTampered) {
		t.Fatalf("changed document: %v, want ErrTampered", err)
	}
}
