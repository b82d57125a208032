package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/mr-tron/base58/base58"

	"github.com/agentsite/agentsite/agent/cardsig"
)

// TrustManifest is the AI Catalog's trust manifest (ai-catalog.schema.json
// $defs/trustManifest) of the node: its identity is its key as a did:key,
// attestations are its verified domains, and signature is a detached JWS
// (compact, empty payload: "<protected>..<signature>") by the node key
// over the manifest's JCS form without the signature, made by
// agent/cardsig.
type TrustManifest struct {
	Identity     string        `json:"identity"`
	IdentityType string        `json:"identityType,omitempty"`
	Attestations []Attestation `json:"attestations,omitempty"`
	Signature    string        `json:"signature,omitempty"`
}

// Attestation is a verifiable claim: here, a domain the node proved.
type Attestation struct {
	Type      string `json:"type"`
	URI       string `json:"uri"`
	MediaType string `json:"mediaType"`
}

// DIDKey is the did:key of an Ed25519 libp2p peer id (multicodec
// ed25519-pub 0xed01, base58btc): the same key as the peer id, in the
// form trust frameworks read.
func DIDKey(pid peer.ID) (string, error) {
	pub, err := pid.ExtractPublicKey()
	if err != nil {
		return "", err
	}
	if pub.Type() != crypto.Ed25519 {
		return "", errors.New("not an Ed25519 key")
	}
	raw, err := pub.Raw()
	if err != nil {
		return "", err
	}
	return "did:key:z" + base58.Encode(append([]byte{0xed, 0x01}, raw...)), nil
}

// SignManifest sets m.Signature: cardsig's signature of m (without a
// signature) by key, in compact detached form.
func SignManifest(m TrustManifest, key crypto.PrivKey, peerID string) (TrustManifest, error) {
	m.Signature = ""
	raw, err := json.Marshal(m)
	if err != nil {
		return m, err
	}
	signed, err := cardsig.SignDocument(raw, key, peerID)
	if err != nil {
		return m, fmt.Errorf("sign the trust manifest: %w", err)
	}
	var out struct {
		Signatures []cardsig.Signature `json:"signatures"`
	}
	if err := json.Unmarshal(signed, &out); err != nil || len(out.Signatures) != 1 {
		return m, fmt.Errorf("sign the trust manifest: unexpected signature form")
	}
	m.Signature = out.Signatures[0].Protected + ".." + out.Signatures[0].Signature
	return m, nil
}

// VerifyManifest checks m's signature and returns its signer's peer id.
func VerifyManifest(m TrustManifest) (string, error) {
	prot, sig, ok := strings.Cut(m.Signature, "..")
	if !ok || prot == "" || sig == "" {
		return "", fmt.Errorf("trust manifest: the signature is not a detached compact JWS")
	}
	m.Signature = ""
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", err
	}
	obj["signatures"] = []cardsig.Signature{{Protected: prot, Signature: sig}}
	card, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	return cardsig.VerifyDocument(card)
}
