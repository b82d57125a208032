package cardsig

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// HostRecordURI names the card extension that carries, on the card a node
// serves for an agent hosted on another node, the host's own signed
// listing record of that agent. The serving node's JWS binds it to its
// url and covers the extension (params are among the signed members), and
// the record is the host's libp2p signature over what it claims: name,
// description, skills, tags, version, owner.
const HostRecordURI = "https://agentsite.dev/ext/host-record/v1"

// HostRecordParams are the extension's params: host, the host's peer id;
// record, the signed envelope (standard base64) as the host published it
// (a libp2p record envelope: Ed25519, domain agent.PayloadDomain, payload
// type agent.PayloadCodec).
const (
	HostRecordParamHost   = "host"
	HostRecordParamRecord = "record"
)

var (
	ErrNoHostRecord  = errors.New("agent card: no host record (the card is the serving node's own agent's, or not an AgentSite card)")
	ErrHostMismatch  = errors.New("agent card: the host record was not signed by the host the card names")
	ErrClaimMismatch = errors.New("agent card: the card's name, description or skills differ from its host's signed record")
)

// HostRecordExtension is the extension for the card of an agent hosted
// elsewhere, from the envelope this node holds of it.
func HostRecordExtension(hostPeerID string, envelope []byte) map[string]any {
	return map[string]any{
		"uri": HostRecordURI,
		"description": "The host node's own signed listing record of this agent (libp2p signed envelope, Ed25519, " +
			"domain " + agent.PayloadDomain + "): verify it against the host's peer id to check the host's own claims.",
		"params": map[string]any{
			HostRecordParamHost:   hostPeerID,
			HostRecordParamRecord: base64.StdEncoding.EncodeToString(envelope),
		},
	}
}

// VerifyHostRecord checks a card's host record: the envelope's signature,
// its signer being the host the params name, and the card saying what the
// record says (name is its display name, the same description, every
// skill id one of its skills, or its name for an agent without skills).
// It returns the record (expiry is not checked: the card may be served
// from a cache; compare ExpiresAt with the time if that matters).
// ErrNoHostRecord: the card carries none.
func VerifyHostRecord(card []byte, now time.Time) (*agent.Record, error) {
	if len(card) > MaxCardBytes {
		return nil, ErrTooLarge
	}
	var c struct {
		Name         string `json:"name"`
		Description  string `json:"description"`
		Capabilities struct {
			Extensions []struct {
				URI    string          `json:"uri"`
				Params json.RawMessage `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
	}
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var params json.RawMessage
	for _, e := range c.Capabilities.Extensions {
		if e.URI == HostRecordURI {
			params = e.Params
			break
		}
	}
	if params == nil {
		return nil, ErrNoHostRecord
	}
	var p struct {
		Host   string `json:"host"`
		Record string `json:"record"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("%w: host record params: %v", ErrMalformed, err)
	}
	env, err := base64.StdEncoding.DecodeString(p.Record)
	if err != nil {
		return nil, fmt.Errorf("%w: host record is not base64: %v", ErrMalformed, err)
	}
	rec, err := agent.OpenIgnoringExpiry(env, now)
	if err != nil {
		return nil, fmt.Errorf("agent card: host record: %w", err)
	}
	if p.Host == "" || rec.Publisher != p.Host {
		return nil, fmt.Errorf("%w: signed by %s, the card names %q", ErrHostMismatch, rec.Publisher, p.Host)
	}
	if c.Name != rec.DisplayName || c.Description != rec.Description {
		return nil, ErrClaimMismatch
	}
	ids := map[string]bool{}
	for _, s := range rec.Skills {
		ids[s.ID] = true
	}
	if len(rec.Skills) == 0 {
		ids[rec.Name] = true
	}
	for _, s := range c.Skills {
		if !ids[s.ID] {
			return nil, fmt.Errorf("%w: skill %q", ErrClaimMismatch, s.ID)
		}
	}
	return rec, nil
}
