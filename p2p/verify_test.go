package p2p

import (
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p/intake"
)

func newKey(t *testing.T) (crypto.PrivKey, peer.ID) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(k)
	return k, id
}

func sealed(t *testing.T, key crypto.PrivKey, host peer.ID, now time.Time) (*agent.Record, []byte) {
	t.Helper()
	r := &agent.Record{
		Name: "probe-bot", DisplayName: "Probe", Description: "x", Tags: []string{"probe"}, Version: "1.0.0",
		Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: host.String(), Protocol: agent.MCPProtocol}},
		Seq:       1, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
	}
	env, err := agent.Seal(r, key, now)
	if err != nil {
		t.Fatal(err)
	}
	return r, env
}

// A record must name its signer as its host: otherwise anyone could list
// agents "hosted" by a node that never published them.
func TestVerifyRecordRefusesAForeignHost(t *testing.T) {
	now := time.Now()
	key, self := newKey(t)
	_, other := newKey(t)
	v := recordValidator{now: func() time.Time { return now }}

	own, env := sealed(t, key, self, now)
	if _, err := verifyRecord(env, self, now); err != nil {
		t.Errorf("own host: %v", err)
	}
	if err := v.Validate(dhtKey(own.ID), env); err != nil {
		t.Errorf("DHT, own host: %v", err)
	}

	claim, env := sealed(t, key, other, now)
	if _, err := verifyRecord(env, self, now); !errors.Is(err, agent.ErrKeyMismatch) {
		t.Errorf("foreign host: err = %v, want ErrKeyMismatch", err)
	}
	if err := v.Validate(dhtKey(claim.ID), env); !errors.Is(err, agent.ErrKeyMismatch) {
		t.Errorf("DHT, foreign host: err = %v, want ErrKeyMismatch", err)
	}
}

// An older seq is told apart from an invalid record: it is reported as
// intake.ErrReplay (dropped without a strike), an equal one is a duplicate.
func TestSeqCache(t *testing.T) {
	c := newSeqCache(10)
	if err := c.check("a", 5); err != nil {
		t.Fatal(err)
	}
	if err := c.check("a", 5); err != nil {
		t.Errorf("duplicate: %v", err)
	}
	if err := c.check("a", 4); !errors.Is(err, intake.ErrReplay) || intake.Reason(err) != "replay" {
		t.Errorf("older: %v", err)
	}
	if err := c.check("a", 6); err != nil {
		t.Errorf("newer: %v", err)
	}
}
