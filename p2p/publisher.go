package p2p

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/agentsite/agentsite/agent"
)

// Sink receives every verified record, local or from the network. The store
// satisfies it (store.Sink); p2p never imports the store. changed is false
// when the cache already had this seq or a newer one.
type Sink interface {
	Put(ctx context.Context, rec *agent.Record, envelope []byte) (changed bool, err error)
}

// Publisher signs this node's records and delivers them: to the sink, and
// (once the node runs the DHT and GossipSub) to the network.
type Publisher struct {
	key  crypto.PrivKey
	sink Sink
	now  func() time.Time
	// announce, when set, sends the sealed envelope to the network.
	announce func(ctx context.Context, rec *agent.Record, envelope []byte) error
}

// NewPublisher returns a Publisher signing with key and delivering to sink
// only: a node without a network (an offline import, tests). A running
// node publishes through Node.Publisher.
func NewPublisher(key crypto.PrivKey, sink Sink) *Publisher {
	return &Publisher{key: key, sink: sink, now: time.Now}
}

// Publisher returns a Publisher signing with n's key that delivers every
// record to sink and announces it on n's network.
func (n *Node) Publisher(sink Sink) *Publisher {
	p := NewPublisher(n.key, sink)
	p.announce = n.Announce
	return p
}

// AgentID is the id a record named name gets when this node publishes it.
func (p *Publisher) AgentID(name string) (string, error) {
	return agent.DeriveID(p.key.GetPublic(), name)
}

// Publish seals rec with the node key, verifies the envelope exactly as a
// record from the network would be verified, and delivers it. There is one
// road for "a listing became known", whoever published it.
func (p *Publisher) Publish(ctx context.Context, rec *agent.Record) error {
	now := p.now()
	env, err := agent.Seal(rec, p.key, now)
	if err != nil {
		return err
	}
	verified, err := agent.Open(env, now)
	if err != nil {
		return fmt.Errorf("verify own record: %w", err)
	}
	return p.deliver(ctx, verified, env)
}

// SealFresh seals rec without verifying the signature it just made
// (agent.SealOpened): the bulk import's path, where that check is a large
// part of each item's cost. The record returned is the one decoded from the
// envelope, with every field checked as Open checks it; records from the
// network are always verified (Open). It delivers nothing: a batch stores
// in its transaction and announces (Announce) once that committed. Safe
// for concurrent use.
func (p *Publisher) SealFresh(rec *agent.Record) ([]byte, *agent.Record, error) {
	return agent.SealOpened(rec, p.key, p.now())
}

// Announce is the network half: env sent to the network when the
// publisher announces (Node.Publisher), else nothing.
func (p *Publisher) Announce(ctx context.Context, opened *agent.Record, env []byte) error {
	if p.announce == nil {
		return nil
	}
	if err := p.announce(ctx, opened, env); err != nil {
		return fmt.Errorf("announce record: %w", err)
	}
	return nil
}

func (p *Publisher) deliver(ctx context.Context, verified *agent.Record, env []byte) error {
	if _, err := p.sink.Put(ctx, verified, env); err != nil {
		return fmt.Errorf("deliver record: %w", err)
	}
	if p.announce != nil {
		if err := p.announce(ctx, verified, env); err != nil {
			return fmt.Errorf("announce record: %w", err)
		}
	}
	return nil
}
