package p2p

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p/intake"
)

// ErrNoNetwork is returned by look-ups on a node without the DHT.
var ErrNoNetwork = errors.New("the network is not available on this node")

// TagCID is the content id a host provides for each tag of its agents:
// CIDv1 raw of sha256("tag:" + tag). FindProviders on it answers "who hosts
// agents tagged X" without any index server.
func TagCID(tag string) cid.Cid {
	sum := sha256.Sum256([]byte("tag:" + tag))
	m, _ := mh.Encode(sum[:], mh.SHA2_256)
	return cid.NewCidV1(cid.Raw, m)
}

// Lookup asks the DHT for the record of id, verifies it and caches it. The
// caller shows it only if this returns without error.
func (n *Node) Lookup(ctx context.Context, id string) (*agent.Record, error) {
	if n.dht == nil {
		return nil, ErrNoNetwork
	}
	if !agent.ValidID(id) {
		return nil, fmt.Errorf("%w: not an agent id", agent.ErrInvalidField)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	env, err := n.dht.GetValue(ctx, dhtKey(id))
	if err != nil {
		return nil, fmt.Errorf("DHT look-up of %s: %w", id, err)
	}
	rec, err := verifyRecord(env, "", n.now())
	if err == nil && rec.ID != id {
		err = fmt.Errorf("%w: asked for %s, got %s", agent.ErrKeyMismatch, id, rec.ID)
	}
	if err != nil {
		n.metrics.rejected.WithLabelValues(pathDHT, intake.Reason(err)).Inc()
		return nil, err
	}
	if err := n.in.Policy(rec.Publisher); err != nil {
		n.in.Refuse(pathDHT, "", err)
		return nil, err
	}
	n.deliver(ctx, pathDHT, "", rec, env)
	return rec, nil
}

// SearchTag finds up to maxProviders hosts that provide tag in the DHT and
// pulls their listings with that tag through catalogue sync. It returns how
// many providers answered and how many records changed the cache.
func (n *Node) SearchTag(ctx context.Context, tag string, maxProviders int) (providers, changed int, err error) {
	if n.dht == nil {
		return 0, 0, ErrNoNetwork
	}
	if !agent.IsSlug(tag, 1, agent.MaxTagLen) {
		return 0, 0, fmt.Errorf("%w: not a tag", agent.ErrInvalidField)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for pi := range n.dht.FindProvidersAsync(ctx, TagCID(tag), maxProviders) {
		if pi.ID == n.host.ID() || n.gater.Blocked(pi.ID) {
			continue
		}
		if len(pi.Addrs) > 0 {
			n.host.Peerstore().AddAddrs(pi.ID, pi.Addrs, time.Minute)
		}
		c, err := n.SyncFrom(ctx, pi.ID, tag)
		if err != nil {
			n.logger.Debug("tag sync with provider failed", "peer", pi.ID, "tag", tag, "err", err)
			continue
		}
		providers++
		changed += c
	}
	return providers, changed, nil
}

// Connect dials a peer (used by tests and the peers command).
func (n *Node) Connect(ctx context.Context, pi peer.AddrInfo) error {
	return n.host.Connect(ctx, pi)
}
