// Package cardsig signs and verifies A2A 1.0 agent cards (AgentCardSignature,
// A2A 1.0.1 "Agent Card Signing"): a detached JWS (RFC 7515, EdDSA with
// Ed25519) over the card's canonical JSON (JCS, RFC 8785) with the top-level
// `signatures` member left out.
//
// The signing key is always a node's libp2p identity. The protected header
// names the signer's peer id as `kid`, and Verify takes the public key out
// of that peer id (an Ed25519 peer id embeds its key). No key is ever
// fetched: a signature whose header carries `jku`, `jwk`, `x5u` or `x5c`
// points at a key the signer chose, and is refused with ErrForeignKey.
//
// For the A2A server (handlers/a2a), signing every card it serves:
//
//	body, err := json.Marshal(card)          // any card shape, 0.3 or 1.0
//	signed, err := cardsig.Sign(body, nodeKey, nodePeerID.String())
//	// write signed as the response body; the card now has "signatures"
//
// Sign keeps signatures by other signers and replaces one by the same peer
// id, so a card relayed from its host keeps the host's signature. Sign
// costs one Ed25519 signature and a canonicalization (microseconds for a
// card); cache the result per card revision if a card is served often.
//
// For a client (the a2a backend, card import):
//
//	signer, err := cardsig.Verify(body)
//	switch {
//	case errors.Is(err, cardsig.ErrUnsigned): // no signature: accept, unsigned
//	case err != nil:                          // refuse the card, say err
//	default:                                  // "signed by node <signer>"
//	}
//
// Canonical form, as the official SDKs compute it (@a2a-js/sdk 1.3.0's
// canonicalizeAgentCard; TestA2AJSInterop checks both directions): only
// the members A2A 1.0's AgentCard message defines (schema.go), then every
// null, "", [] and {} dropped at every depth, then JCS. So the 0.3 members
// a card may carry beside the 1.0 ones (url, preferredTransport, a 0.3
// security scheme's type) are not signed: a reader of a signed card uses
// the 1.0 members only. A JSON object that is not a card (a trust
// manifest) is signed whole with SignDocument and VerifyDocument.
//
// The card a node serves for an agent hosted on another node carries the
// host's signed listing record (HostRecordExtension, hostrecord.go), and
// VerifyHostRecord checks the host's claims with it.
package cardsig
