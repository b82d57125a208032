package agent

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
)

// Errors of Open, so callers (metrics, topic validators) can count rejections
// by reason without matching strings.
var (
	ErrTooLarge     = errors.New("agent record: envelope too large")
	ErrBadEnvelope  = errors.New("agent record: bad envelope or signature")
	ErrKeyMismatch  = errors.New("agent record: publisher or id does not match the signing key")
	ErrExpired      = errors.New("agent record: expired")
	ErrInvalidField = errors.New("agent record: invalid field")
	// ErrOverQuota: the record is valid, but its publisher, or the peer
	// that relayed it, already placed as many listings on this node as
	// the node admits (docs/architecture.md "Peers are adversaries").
	ErrOverQuota = errors.New("agent record: over quota")
)

// Seal fills the derived fields (publisher, id), validates the record and
// signs it with key into a libp2p envelope. It returns the marshalled
// envelope, which is what the network carries and the store keeps.
func Seal(r *Record, key crypto.PrivKey, now time.Time) ([]byte, error) {
	pid, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("peer id from key: %w", err)
	}
	r.Publisher = pid.String()
	id, err := DeriveID(key.GetPublic(), r.Name)
	if err != nil {
		return nil, err
	}
	r.ID = id
	if err := r.Validate(now); err != nil {
		return nil, err
	}
	env, err := record.Seal(r, key)
	if err != nil {
		return nil, fmt.Errorf("seal agent record: %w", err)
	}
	b, err := env.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshal envelope: %w", err)
	}
	if len(b) > MaxRecordBytes {
		return nil, &ValidationError{Fields: map[string]string{"record": fmt.Sprintf("encoded record is %d bytes; the limit is %d", len(b), MaxRecordBytes)}}
	}
	return b, nil
}

// SealOpened seals r as Seal does and returns, with the envelope, the
// record Open would return from it (decoded from the signed payload, every
// field checked at now, expiry included) without verifying the signature
// just made: for a signer that delivers its own records in bulk.
func SealOpened(r *Record, key crypto.PrivKey, now time.Time) ([]byte, *Record, error) {
	env, err := Seal(r, key, now)
	if err != nil {
		return nil, nil, err
	}
	payload, err := r.MarshalRecord()
	if err != nil {
		return nil, nil, fmt.Errorf("encode agent record: %w", err)
	}
	var rec Record
	if err := rec.UnmarshalRecord(payload); err != nil {
		return nil, nil, err
	}
	if err := rec.validateFields(now, false); err != nil {
		return nil, nil, err
	}
	if !now.Before(rec.ExpiresAt) {
		return nil, nil, fmt.Errorf("%w at %s", ErrExpired, rec.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return env, &rec, nil
}

// Open verifies a marshalled envelope and returns the record inside: size,
// signature, signature domain, payload type, publisher and id bound to the
// signing key, and every field valid at now (expiry included).
func Open(data []byte, now time.Time) (*Record, error) {
	r, err := OpenIgnoringExpiry(data, now)
	if err != nil {
		return nil, err
	}
	if !now.Before(r.ExpiresAt) {
		return nil, fmt.Errorf("%w at %s", ErrExpired, r.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return r, nil
}

// OpenIgnoringExpiry is Open without the expiry check, for records read back
// from our own store (kept as history past their expiry).
func OpenIgnoringExpiry(data []byte, now time.Time) (r *Record, err error) {
	if len(data) > MaxRecordBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxRecordBytes)
	}
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("%w: %v", ErrBadEnvelope, p)
		}
	}()
	var rec Record
	env, err := record.ConsumeTypedEnvelope(data, &rec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEnvelope, err)
	}
	// ConsumeTypedEnvelope checks the signature domain but not the payload
	// type, so check it here.
	if !bytes.Equal(env.PayloadType, PayloadCodec) {
		return nil, fmt.Errorf("%w: payload type %q, want %q", ErrBadEnvelope, env.PayloadType, PayloadCodec)
	}
	if env.PublicKey.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("%w: signing key is %v; records are signed with Ed25519 node keys", ErrBadEnvelope, env.PublicKey.Type())
	}
	pid, err := peer.IDFromPublicKey(env.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEnvelope, err)
	}
	if rec.Publisher != pid.String() {
		return nil, fmt.Errorf("%w: publisher %q, signer %s", ErrKeyMismatch, rec.Publisher, pid)
	}
	id, err := DeriveID(env.PublicKey, rec.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEnvelope, err)
	}
	if rec.ID != id {
		return nil, fmt.Errorf("%w: id %q is not derived from the signer and name", ErrKeyMismatch, rec.ID)
	}
	if err := rec.validateFields(now, false); err != nil {
		return nil, err
	}
	return &rec, nil
}
