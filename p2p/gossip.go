package p2p

import (
	"context"
	"errors"
	"fmt"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p/intake"
)

func (n *Node) startPubSub() error {
	ps, err := pubsub.NewGossipSub(n.ctx, n.host,
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithPeerScore(intake.ScoreParams(func(p peer.ID) float64 { return n.in.Score(p) }, TopicRecords, TopicStatus, TopicStatus2), intake.ScoreThresholds()),
		pubsub.WithPeerScoreInspect(pubsub.PeerScoreInspectFn(n.scores.Set), intake.ScoreInspectPeriod),
		pubsub.WithPeerGater(pubsub.NewPeerGaterParams(0.33, pubsub.ScoreParameterDecay(2*time.Minute), pubsub.ScoreParameterDecay(10*time.Minute))),
		pubsub.WithMaxMessageSize(maxGossipSize),
		pubsub.WithPeerExchange(true),
		pubsub.WithFloodPublish(true),
		pubsub.WithValidateQueueSize(256),
		pubsub.WithGossipSubParams(gossipParams()),
	)
	if err != nil {
		return fmt.Errorf("start gossipsub: %w", err)
	}
	n.ps = ps
	if err := ps.RegisterTopicValidator(TopicRecords, n.validateRecordMsg); err != nil {
		return fmt.Errorf("register record validator: %w", err)
	}
	for _, t := range []string{TopicStatus, TopicStatus2} {
		if err := ps.RegisterTopicValidator(t, n.beat.Validate); err != nil {
			return fmt.Errorf("register status validator: %w", err)
		}
	}
	if n.records, err = ps.Join(TopicRecords); err != nil {
		return fmt.Errorf("join %s: %w", TopicRecords, err)
	}
	if n.status, err = ps.Join(TopicStatus); err != nil {
		return fmt.Errorf("join %s: %w", TopicStatus, err)
	}
	if n.status2, err = ps.Join(TopicStatus2); err != nil {
		return fmt.Errorf("join %s: %w", TopicStatus2, err)
	}
	recSub, err := n.records.Subscribe(pubsub.WithBufferSize(256))
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", TopicRecords, err)
	}
	statSub, err := n.status.Subscribe()
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", TopicStatus, err)
	}
	stat2Sub, err := n.status2.Subscribe()
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", TopicStatus2, err)
	}
	n.goLoop(func(ctx context.Context) { n.readLoop(ctx, recSub, n.handleRecordMsg) })
	n.goLoop(func(ctx context.Context) { n.readLoop(ctx, statSub, n.beat.Handle) })
	n.goLoop(func(ctx context.Context) { n.readLoop(ctx, stat2Sub, n.beat.Handle) })
	return nil
}

// gossipParams are GossipSub's defaults but for the gossip, which grew
// with the planet (docs/architecture.md "Idle cost"): gossip (IHAVE) goes
// to Dlazy = 6 peers a heartbeat per topic with messages, never to a share
// of all the peers (GossipFactor 0; default a quarter: at 50 nodes 11
// peers a second, at 10,000 nodes 2,500). PRUNE offers 4 peers for
// exchange (default 16 signed peer records, a few KiB per PRUNE); the DHT
// finds peers anyway. The mesh stays D = 6: with D = 4 (fewer copies of
// each heartbeat) TestPartitionAndHeal saw an honest sender's heartbeats
// taken for a flood in 1 of 3 runs.
func gossipParams() pubsub.GossipSubParams {
	p := pubsub.DefaultGossipSubParams()
	p.GossipFactor = 0
	p.PrunePeers = 4
	return p
}

// readLoop hands every validated message from others to handle until ctx
// ends. Our own messages are skipped: we stored them when we published.
func (n *Node) readLoop(ctx context.Context, sub *pubsub.Subscription, handle func(context.Context, *pubsub.Message)) {
	defer sub.Cancel()
	for {
		msg, err := sub.Next(ctx)
		if err != nil {
			return
		}
		if msg.ReceivedFrom == n.host.ID() {
			continue
		}
		handle(ctx, msg)
	}
}

// validateRecordMsg runs before a record is accepted or forwarded: a forged,
// replayed, oversized, expired or mis-keyed record is rejected, which counts
// against the sender's peer score and its strikes.
func (n *Node) validateRecordMsg(ctx context.Context, from peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	if from == n.host.ID() {
		return pubsub.ValidationAccept
	}
	rec, err := verifyRecord(msg.Data, msg.GetFrom(), n.now())
	if err != nil {
		n.in.Reject(pathGossip, from, err)
		return pubsub.ValidationReject
	}
	if w := n.withhold.Load(); w != nil && (*w)(rec.ID) {
		return pubsub.ValidationIgnore // a test's lost gossip
	}
	if err := n.seqs.check(rec.ID, rec.Seq); err != nil {
		// Updates can overtake each other on different mesh paths: the
		// forwarder of the older one may be honest. Drop it, unpunished.
		n.in.Outdated(pathGossip, err)
		return pubsub.ValidationIgnore
	}
	// Valid floods: past its rate a forwarder's messages, and a
	// publisher's fresh records, are ignored (intake.AllowGossip).
	if !n.in.AllowGossip(pathGossip, from, rec.Publisher) {
		return pubsub.ValidationIgnore
	}
	if err := n.in.Admit(rec, from, ipGroup(n.host.Network(), from)); err != nil {
		n.in.Refuse(pathGossip, from, err)
		if errors.Is(err, intake.ErrUntrusted) {
			// --trusted-only keeps only trusted listings, but still
			// relays the valid records of others: the planet's gossip
			// does not depend on who keeps what.
			return pubsub.ValidationAccept
		}
		return pubsub.ValidationIgnore
	}
	msg.ValidatorData = rec
	return pubsub.ValidationAccept
}

func (n *Node) handleRecordMsg(ctx context.Context, msg *pubsub.Message) {
	rec, ok := msg.ValidatorData.(*agent.Record)
	if !ok {
		return
	}
	n.deliver(ctx, pathGossip, msg.ReceivedFrom, rec, msg.Data)
}

// deliver hands a verified, admitted record to the cache. A record the
// cache refuses over the publisher's quota counts against from, the peer
// that relayed it.
func (n *Node) deliver(ctx context.Context, path string, from peer.ID, rec *agent.Record, env []byte) bool {
	changed, err := n.cfg.Cache.Put(ctx, rec, env)
	if err == nil {
		n.catalog.Hold(env) // a digest page need not bring it (p2p/catalogsync/feed.go)
	}
	return n.delivered(ctx, path, from, rec, changed, err)
}

// delivered counts what the cache did with rec (Put's changed and err),
// as deliver; it reports whether rec changed the cache.
func (n *Node) delivered(ctx context.Context, path string, from peer.ID, rec *agent.Record, changed bool, err error) bool {
	if errors.Is(err, agent.ErrOverQuota) {
		n.in.Refuse(path, from, err)
		return false
	}
	var full interface{ CatalogueFull() bool }
	if errors.As(err, &full) && full.CatalogueFull() {
		// This node's capacity (store.ErrCatalogueFull, --max-listings):
		// counted, and no fault of the peer that relayed it.
		n.metrics.rejected.WithLabelValues(path, "full").Inc()
		n.logger.Debug("network record refused: the catalogue is full", "path", path, "id", rec.ID, "err", err)
		return false
	}
	if err != nil {
		if ctx.Err() == nil {
			n.logger.Warn("caching a verified record failed", "path", path, "id", rec.ID, "err", err)
		}
		return false
	}
	n.hosts.Note(rec.Publisher, n.now()) // its heartbeats count in the planet's size at once
	if changed {
		n.metrics.accepted.WithLabelValues(path).Inc()
	}
	return changed
}

// Announce publishes a record this node signed: on the records topic (every
// node caches it within a gossip round) and, in the background, to the DHT
// under /agent/<id> and as a provider of each of its tags.
//
// Gossip is paced (ownGossipPerMinute): a record over the pace is not
// gossiped, and never waits for it. It is stored already (its caller
// stored it first), so it is in this node's sync feed, and every peer
// pulls it at its next sync with this node. Peers ignore a publisher's
// records past their rate (Admission.PublisherPerMinute), so gossiping
// more would only be lost.
func (n *Node) Announce(ctx context.Context, rec *agent.Record, env []byte) error {
	if n.records == nil {
		return nil
	}
	n.seqs.check(rec.ID, rec.Seq) //nolint:errcheck // our own seq only grows
	n.catalog.Hold(env)           // our own: a digest page need not bring it back
	n.beat.OwnChanged()           // the hosted count is recounted off the heartbeat's path
	if !n.pace.allow(n.now()) {
		n.metrics.published.WithLabelValues("gossip", "paced").Inc()
		if k := n.pace.deferred(n.now()); k > 0 {
			n.logger.Info("own records over the gossip pace are not gossiped; peers pull them at their next sync",
				"deferred", k, "pace_per_minute", ownGossipPerMinute)
		}
		n.putDHTLater(rec, env)
		return nil
	}
	if err := n.records.Publish(ctx, env); err != nil {
		n.metrics.published.WithLabelValues("gossip", "error").Inc()
		return fmt.Errorf("gossip record: %w", err)
	}
	n.metrics.published.WithLabelValues("gossip", "ok").Inc()
	n.putDHTLater(rec, env)
	return nil
}

// putDHTLater queues rec's DHT put and tag provides on the node's bounded
// DHT publisher (dhtpublish.go); it never waits.
func (n *Node) putDHTLater(rec *agent.Record, env []byte) {
	if n.dhtPub != nil {
		n.dhtPub.add(rec, env)
	}
}

// putDHT puts rec's envelope under its key, within 30 s (a worker of the
// DHT publisher).
func (n *Node) putDHT(ctx context.Context, rec *agent.Record, env []byte) {
	if n.dht == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A record published right at start-up (the demo agents) would find
	// an empty routing table; wait for the first peers instead of skipping
	// until the next refresh.
	for wait := 50 * time.Millisecond; len(n.dht.RoutingTable().ListPeers()) == 0; wait = min(2*wait, 2*time.Second) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
	if err := n.dht.PutValue(ctx, dhtKey(rec.ID), env); err != nil {
		n.metrics.published.WithLabelValues("dht_put", "error").Inc()
		n.logger.Debug("DHT put failed; gossip and sync still carry the record", "id", rec.ID, "err", err)
	} else {
		n.metrics.published.WithLabelValues("dht_put", "ok").Inc()
	}
}

// provideTag tells the DHT this node provides agents tagged tag, within
// 30 s (a worker of the DHT publisher, once per tag and tagProvideEvery).
func (n *Node) provideTag(ctx context.Context, tag string) error {
	if n.dht == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.dht.Provide(ctx, TagCID(tag), true); err != nil {
		n.metrics.published.WithLabelValues("dht_provide", "error").Inc()
		n.logger.Debug("DHT provide failed", "tag", tag, "err", err)
		return fmt.Errorf("provide tag %q: %w", tag, err)
	}
	n.metrics.published.WithLabelValues("dht_provide", "ok").Inc()
	return nil
}
