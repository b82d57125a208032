package cardsig

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gowebpki/jcs"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// MaxCardBytes bounds a card Sign or Verify reads: a card is a few KB; 1
// MiB leaves room for a large skill list and stops a hostile one early.
const MaxCardBytes = 1 << 20

// Errors of Verify (and Sign), so callers say why a card was refused
// without matching strings.
var (
	ErrUnsigned   = errors.New("agent card: not signed")
	ErrTampered   = errors.New("agent card: signature does not match the card (changed after signing, or signed by another key)")
	ErrForeignKey = errors.New("agent card: the signature names its own key location (jku, jwk, x5u or x5c); keys come only from the signer's peer id")
	ErrUnknownAlg = errors.New("agent card: unknown signature algorithm (only EdDSA with Ed25519 is accepted)")
	ErrBadKeyID   = errors.New("agent card: the signature's kid is not an Ed25519 libp2p peer id")
	ErrMalformed  = errors.New("agent card: malformed card or signature")
	ErrTooLarge   = errors.New("agent card: too large")
)

// Signature is A2A 1.0's AgentCardSignature: a JWS in its flattened JSON
// form with the payload detached (the payload is the card itself).
type Signature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

// header is the protected header Sign writes and the members Verify reads.
type header struct {
	Alg  string   `json:"alg"`
	Typ  string   `json:"typ,omitempty"`
	Kid  string   `json:"kid,omitempty"`
	Crit []string `json:"crit,omitempty"`
}

// keyLocations are the JOSE header members by which a signer supplies its
// own key; any of them refuses the signature (the key is the peer id).
var keyLocations = []string{"jku", "jwk", "x5u", "x5c"}

var b64 = base64.RawURLEncoding

// Sign returns card with a `signatures` member holding an EdDSA signature
// by key, whose peer id must be peerID. Signatures by other signers stay;
// one by the same peer id is replaced.
func Sign(card []byte, key crypto.PrivKey, peerID string) ([]byte, error) {
	return sign(card, key, peerID, Canonical)
}

// SignDocument is Sign for a JSON object that is not an agent card (a
// trust manifest): the signature covers the whole object's JCS form
// without its top-level `signatures`, every member.
func SignDocument(doc []byte, key crypto.PrivKey, peerID string) ([]byte, error) {
	return sign(doc, key, peerID, CanonicalDocument)
}

// VerifyDocument is Verify for what SignDocument signed.
func VerifyDocument(doc []byte) (signerPeerID string, err error) {
	return verify(doc, CanonicalDocument)
}

func sign(card []byte, key crypto.PrivKey, peerID string, canon func([]byte) ([]byte, error)) ([]byte, error) {
	if key == nil || key.Type() != crypto.Ed25519 {
		return nil, errors.New("agent card: sign: the key must be an Ed25519 libp2p key")
	}
	pid, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("agent card: sign: peer id of key: %w", err)
	}
	if pid.String() != peerID {
		return nil, fmt.Errorf("agent card: sign: key belongs to %s, not %s", pid, peerID)
	}
	members, payload, err := split(card, canon)
	if err != nil {
		return nil, err
	}
	var kept []json.RawMessage
	for _, raw := range members.signatures {
		var s Signature
		if json.Unmarshal(raw, &s) == nil {
			if h, _, err := parseHeader(s); err == nil && h.Kid == peerID {
				continue
			}
		}
		kept = append(kept, raw)
	}
	prot, err := json.Marshal(header{Alg: "EdDSA", Typ: "JOSE", Kid: peerID})
	if err != nil {
		return nil, err
	}
	s := Signature{Protected: b64.EncodeToString(prot)}
	sig, err := key.Sign(signingInput(s.Protected, payload))
	if err != nil {
		return nil, fmt.Errorf("agent card: sign: %w", err)
	}
	s.Signature = b64.EncodeToString(sig)
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	sigs, err := json.Marshal(append(kept, raw))
	if err != nil {
		return nil, err
	}
	members.obj["signatures"] = sigs
	return marshal(members.obj)
}

// Verify checks every signature on card and returns the peer id of the
// first signer. An unsigned card gives ErrUnsigned; a card is refused
// (another error) if any of its signatures fails, so what it says is what
// each of its signers signed.
func Verify(card []byte) (signerPeerID string, err error) {
	return verify(card, Canonical)
}

func verify(card []byte, canon func([]byte) ([]byte, error)) (signerPeerID string, err error) {
	members, payload, err := split(card, canon)
	if err != nil {
		return "", err
	}
	if len(members.signatures) == 0 {
		return "", ErrUnsigned
	}
	for i, raw := range members.signatures {
		var s Signature
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: signature %d: %v", ErrMalformed, i, err)
		}
		pid, err := verifyOne(s, payload)
		if err != nil {
			return "", fmt.Errorf("signature %d: %w", i, err)
		}
		if signerPeerID == "" {
			signerPeerID = pid
		}
	}
	return signerPeerID, nil
}

func verifyOne(s Signature, payload []byte) (string, error) {
	h, unprotected, err := parseHeader(s)
	if err != nil {
		return "", err
	}
	for _, m := range keyLocations {
		if _, ok := unprotected[m]; ok {
			return "", ErrForeignKey
		}
	}
	if len(h.Crit) > 0 {
		return "", fmt.Errorf("%w: critical header members %v are not understood", ErrMalformed, h.Crit)
	}
	if h.Alg != "EdDSA" && h.Alg != "Ed25519" {
		return "", fmt.Errorf("%w: %q", ErrUnknownAlg, h.Alg)
	}
	pid, err := peer.Decode(h.Kid)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrBadKeyID, h.Kid)
	}
	pub, err := pid.ExtractPublicKey()
	if err != nil || pub.Type() != crypto.Ed25519 {
		return "", fmt.Errorf("%w: %q", ErrBadKeyID, h.Kid)
	}
	sig, err := b64.DecodeString(s.Signature)
	if err != nil {
		return "", fmt.Errorf("%w: signature is not base64url: %v", ErrMalformed, err)
	}
	ok, err := pub.Verify(signingInput(s.Protected, payload), sig)
	if err != nil || !ok {
		return "", ErrTampered
	}
	return pid.String(), nil
}

// parseHeader decodes the protected header and merges the kid and alg of
// the unprotected one (which must agree when both say them); it returns
// the union of both headers' members for the key-location check.
func parseHeader(s Signature) (header, map[string]any, error) {
	var h header
	raw, err := b64.DecodeString(s.Protected)
	if err != nil {
		return h, nil, fmt.Errorf("%w: protected header is not base64url: %v", ErrMalformed, err)
	}
	all := map[string]any{}
	if err := json.Unmarshal(raw, &all); err != nil {
		return h, nil, fmt.Errorf("%w: protected header: %v", ErrMalformed, err)
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, nil, fmt.Errorf("%w: protected header: %v", ErrMalformed, err)
	}
	for k, v := range s.Header {
		switch k {
		case "kid", "alg":
			str, _ := v.(string)
			cur := &h.Kid
			if k == "alg" {
				cur = &h.Alg
			}
			if *cur != "" && *cur != str {
				return h, nil, fmt.Errorf("%w: %s differs between protected and unprotected header", ErrMalformed, k)
			}
			*cur = str
		case "crit":
			return h, nil, fmt.Errorf("%w: crit must be protected", ErrMalformed)
		}
		all[k] = v
	}
	return h, all, nil
}

func signingInput(protected string, payload []byte) []byte {
	in := make([]byte, 0, len(protected)+1+b64.EncodedLen(len(payload)))
	in = append(in, protected...)
	in = append(in, '.')
	return b64.AppendEncode(in, payload)
}

type parsed struct {
	obj        map[string]json.RawMessage
	signatures []json.RawMessage
}

// split parses card (strictly: JCS refuses duplicate names and invalid
// JSON), takes out its signatures and returns the canonical payload.
func split(card []byte, canon func([]byte) ([]byte, error)) (parsed, []byte, error) {
	var p parsed
	if len(card) > MaxCardBytes {
		return p, nil, fmt.Errorf("%w: %d bytes; the limit is %d", ErrTooLarge, len(card), MaxCardBytes)
	}
	strict, err := jcs.Transform(card)
	if err != nil {
		return p, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if err := json.Unmarshal(strict, &p.obj); err != nil || p.obj == nil {
		return p, nil, fmt.Errorf("%w: a card is a JSON object", ErrMalformed)
	}
	if raw, ok := p.obj["signatures"]; ok {
		if !bytes.Equal(raw, []byte("null")) {
			if err := json.Unmarshal(raw, &p.signatures); err != nil {
				return p, nil, fmt.Errorf("%w: signatures is not a list", ErrMalformed)
			}
		}
		delete(p.obj, "signatures")
	}
	payload, err := canon(card)
	if err != nil {
		return p, nil, err
	}
	return p, payload, nil
}

// Canonical is the signed form of card, as the official SDKs compute it
// (@a2a-js/sdk 1.3.0's canonicalizeAgentCard): the members A2A 1.0's
// AgentCard defines (schema.go; `signatures` is not among them), then
// every null, "", [] and {} dropped at every depth (array elements too,
// and what is empty once they are gone), then JCS.
func Canonical(card []byte) ([]byte, error) {
	if len(card) > MaxCardBytes {
		return nil, fmt.Errorf("%w: %d bytes; the limit is %d", ErrTooLarge, len(card), MaxCardBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(card))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: a card is a JSON object", ErrMalformed)
	}
	b, err := marshal(orEmpty(prune(normalize(obj, agentCard))))
	if err != nil {
		return nil, err
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return out, nil
}

// CanonicalDocument is the signed form of a document SignDocument signs:
// the object without its top-level `signatures`, in JCS.
func CanonicalDocument(doc []byte) ([]byte, error) {
	if len(doc) > MaxCardBytes {
		return nil, fmt.Errorf("%w: %d bytes; the limit is %d", ErrTooLarge, len(doc), MaxCardBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%w: a document is a JSON object", ErrMalformed)
	}
	delete(obj, "signatures")
	b, err := marshal(obj)
	if err != nil {
		return nil, err
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return out, nil
}

// prune drops empty values (null, "", and what is [] or {} once its own
// empty values are gone) from objects and arrays, at every depth; it
// returns nil for a value that is empty itself.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, m := range t {
			if m = prune(m); m == nil {
				delete(t, k)
				continue
			}
			t[k] = m
		}
		if len(t) == 0 {
			return nil
		}
		return t
	case []any:
		out := t[:0]
		for _, m := range t {
			if m = prune(m); m != nil {
				out = append(out, m)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if t == "" {
			return nil
		}
	}
	return v
}

// orEmpty is v, or an empty object for a card with nothing left.
func orEmpty(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}

// marshal encodes without HTML escaping, so the output reads like the input.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
