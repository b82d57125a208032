package agent

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// Records are signed with Ed25519 node keys only; a validly signed record
// under another key type is refused.
func TestOpenRefusesNonEd25519Keys(t *testing.T) {
	now := time.Now()
	key, _, err := crypto.GenerateSecp256k1Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r := minimalRecord(now)
	env, err := Seal(r, key, now)
	if err != nil {
		t.Fatalf("seal with secp256k1: %v", err)
	}
	if _, err := Open(env, now); !errors.Is(err, ErrBadEnvelope) {
		t.Fatalf("Open(secp256k1-signed) = %v, want ErrBadEnvelope", err)
	}
}

// A description of 4 KiB of '<' fits the record limit: HTML escaping is off.
func TestSealDoesNotEscapeHTML(t *testing.T) {
	now := time.Now()
	r := minimalRecord(now)
	r.Description = strings.Repeat("<", MaxDescriptionBytes)
	env, err := Seal(r, newKey(t), now)
	if err != nil {
		t.Fatalf("seal: %v", err)
	}
	got, err := Open(env, now)
	if err != nil || got.Description != r.Description {
		t.Fatalf("round trip: %v", err)
	}
}

func TestValidateRefusesBidiOverrides(t *testing.T) {
	now := time.Now()
	for _, s := range []string{"Good\u202eBot", "a\u2066b", "line\u2028break"} {
		r := minimalRecord(now)
		r.ID = strings.Repeat("a", IDLen)
		r.Publisher = peerIDOf(t, newKey(t))
		r.DisplayName = s
		var ve *ValidationError
		if err := r.Validate(now); !errors.As(err, &ve) || ve.Fields["display_name"] == "" {
			t.Errorf("display name %q: %v", s, err)
		}
	}
}
