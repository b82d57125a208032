package heartbeat

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// fakeCache is a Store that takes everything and holds nothing.
type fakeCache struct{}

func (fakeCache) NodeSeen(context.Context, agent.Heartbeat) error                  { return nil }
func (fakeCache) LocalCount(context.Context) (int, error)                          { return 0, nil }
func (fakeCache) LocalNames(context.Context, []string) (map[string]string, error)  { return nil, nil }
func (fakeCache) SetHealth(context.Context, string, map[string]agent.Health) error { return nil }

func genKey(t testing.TB) (crypto.PrivKey, peer.ID) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(k)
	return k, id
}

func newKey(t *testing.T) (crypto.PrivKey, peer.ID) {
	t.Helper()
	return genKey(t)
}

// maxGossipSize is the host's GossipSub message cap (p2p/node.go): every
// heartbeat message, framed, must fit under it.
const maxGossipSize = 64 << 10

// reasonOf is the reason p2p's metrics give an invalid heartbeat
// (p2p/verify.go rejectReason), for the kinds decodeHeartbeat returns.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, agent.ErrTooLarge):
		return "size"
	case errors.Is(err, agent.ErrKeyMismatch):
		return "key"
	case errors.Is(err, agent.ErrInvalidField):
		return "invalid"
	}
	return "malformed"
}
