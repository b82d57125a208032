package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// Limits of a heartbeat on agentsite/status/1.
const (
	maxHeartbeatAddrs = 16
	// maxHeartbeatBytes caps one heartbeat message. It stays well under
	// the host's GossipSub message cap (64 KiB; the pubsub message adds its signature, key, seqno and
	// topic, under 1 KiB); a host whose health entries do not fit sends
	// several heartbeats (splitHeartbeat).
	maxHeartbeatBytes = 48 << 10
)

// heartbeatLoop announces this node on the status topics every interval,
// so others keep its listings online and its row in their nodes table
// fresh. The interval grows with the planet (heartbeatInterval).
//
// The next round waits a whole interval after this one ends (a timer, not a
// ticker), so rounds are never closer than an interval however long one
// takes: receivers drop rounds that come too soon (beats.go).
func (s *Service) heartbeatLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(s.sendHeartbeat(ctx))
	}
}

// sendHeartbeat publishes this interval's round on agentsite/status/2 (and
// on agentsite/status/1 while older nodes are heard) and returns the
// interval it declared. The changed health also goes into this node's own
// store (its read loop skips its own messages), by the keeper: nothing on
// this path waits for the store.
func (s *Service) sendHeartbeat(ctx context.Context) time.Duration {
	now := s.now().UTC() // at the start: rounds are then an interval apart (heartbeatLoop)
	interval := s.heartbeatInterval(now)
	addrs := heartbeatAddrs(s.cfg.Addrs())
	base := agent.Heartbeat{
		PeerID:     s.self,
		Version:    s.cfg.Version,
		Name:       s.cfg.NodeName,
		Load:       float64(runtime.NumGoroutine()) / float64(100*runtime.NumCPU()),
		SentAt:     now,
		IntervalMS: interval.Milliseconds(),
		Domains:    s.ownDomains(), // every round: a round without them says "none"
	}
	var health map[string]agent.Health
	if src := s.healthSource(); src != nil {
		health = src()
	}
	r, err := s.buildRound(ctx, base, health, addrs) // from memory: no store read (heartbeatStateLoop)
	if err != nil {
		if ctx.Err() == nil {
			s.logger.Warn("reading local agents for the heartbeat failed", "err", err)
		}
		return interval
	}
	s.storeOwnHealth(ctx, r.delta) // the keeper writes it, after the round is out
	parts, err := r.messages()
	if err != nil {
		s.logger.Warn("building the heartbeat failed", "err", err)
		return interval
	}
	s.publishRound(ctx, s.hb.topic, parts)
	if s.publishV1() {
		// Older nodes read addresses from every heartbeat; the round's
		// interval_ms tells newer nodes to take it from status/2.
		r.base.Addrs = addrs
		if parts, err = r.messages(); err == nil {
			s.publishRound(ctx, s.v1, parts)
		}
	}
	return interval
}

// publishRound publishes a round's messages on topic, in order, until one
// fails.
func (s *Service) publishRound(ctx context.Context, topic *pubsub.Topic, parts [][]byte) {
	for _, b := range parts {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := topic.Publish(pctx, b)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.logger.Debug("publishing heartbeat failed", "topic", topic.String(), "err", err)
			}
			return
		}
	}
}

// splitHeartbeat encodes base with the health entries, as few messages as
// fit: each at most agent.MaxHeartbeatHealth entries and maxHeartbeatBytes.
// Every message is a whole heartbeat (the node is alive, whichever
// arrives); without health it is one message.
func splitHeartbeat(base agent.Heartbeat, health []agent.HostedHealth) ([][]byte, error) {
	head, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("encode heartbeat: %w", err)
	}
	if len(health) == 0 {
		return [][]byte{head}, nil
	}
	budget := maxHeartbeatBytes - len(head) - len(`,"health":[]`)
	var (
		out  [][]byte
		part []agent.HostedHealth
		size int
	)
	flush := func() error {
		hb := base
		hb.Health = part
		b, err := json.Marshal(hb)
		if err != nil {
			return fmt.Errorf("encode heartbeat: %w", err)
		}
		if len(b) > maxHeartbeatBytes {
			return fmt.Errorf("heartbeat of %d bytes is over the %d byte cap", len(b), maxHeartbeatBytes)
		}
		out = append(out, b)
		part, size = nil, 0
		return nil
	}
	for _, e := range health {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("encode health of %s: %w", e.ID, err)
		}
		if len(part) == agent.MaxHeartbeatHealth || len(part) > 0 && size+len(b)+1 > budget {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		part = append(part, e)
		size += len(b) + 1 // and a comma
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// Validate runs before a heartbeat is accepted or forwarded: a
// malformed, oversized or mis-signed one, or one that claims the health of
// an agent its sender does not host, is rejected, which counts against the
// sender's peer score and its strikes, as a bad record does.
func (s *Service) Validate(ctx context.Context, from peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	if from == s.cfg.Self {
		return pubsub.ValidationAccept
	}
	now := s.now()
	v2 := msg.GetTopic() == TopicStatus2
	hb, err := decodeHeartbeat(msg.Data, msg.GetFrom(), now)
	if err == nil && v2 {
		err = checkHeartbeat2(hb)
	}
	if err != nil {
		s.cfg.Gate.Reject(from, err)
		return pubsub.ValidationReject
	}
	if s.cfg.Gate.Blocked(msg.GetFrom()) {
		return pubsub.ValidationIgnore
	}
	// A forwarder is held to the planet's size in heartbeats, and to an
	// hourly allowance of authors never heard: heartbeats are cheap to
	// sign for endless fresh identities, and a heard host's listings pass
	// the quota of never-heard publishers.
	if author := msg.GetFrom(); from != author {
		if !s.cfg.Gate.AllowRelayed(from, now) {
			s.cfg.Gate.Flood(from)
			return pubsub.ValidationIgnore
		}
		if !s.cfg.Gate.Known(author) {
			if err := s.cfg.Gate.Introduce(author.String(), from, now); err != nil {
				s.cfg.Gate.Refuse(from, err)
				return pubsub.ValidationIgnore
			}
		}
	}
	// One round per sender per heartbeatGap: the rest is ignored (not
	// forwarded, not written). A sender that floods itself loses score; a
	// late or forwarded one is only dropped, as a lagging record is. Each
	// topic has its rounds (a newer node sends a round on both while older
	// nodes are heard); on status/2 the gap follows the sender's interval.
	verdict := beatOK
	if v2 {
		verdict = s.hb.rounds().allowDeclared(hb.PeerID, hb.SentAt, now, heartbeatGap(s.cfg.Interval), hb.Interval())
	} else {
		verdict = s.beats.allow(hb.PeerID, hb.SentAt, now, heartbeatGap(s.cfg.Interval))
	}
	switch verdict {
	case beatLate:
		s.cfg.Gate.Late()
		return pubsub.ValidationIgnore
	case beatFlood:
		if from == msg.GetFrom() {
			s.cfg.Gate.Flood(from)
		} else {
			s.cfg.Gate.Late()
		}
		return pubsub.ValidationIgnore
	}
	s.cfg.Gate.Heard(hb.PeerID, now)
	if !v2 && hb.IntervalMS == 0 { // an older node: publish on status/1 too
		s.oldNodeHeard(now)
	}
	msg.ValidatorData = hb
	return pubsub.ValidationAccept
}

// Handle takes a heartbeat Validate accepted: its domain claims, and its
// receipt and health to the store (queued when StartQueue ran).
func (s *Service) Handle(ctx context.Context, msg *pubsub.Message) {
	hb, ok := msg.ValidatorData.(*agent.Heartbeat)
	if !ok {
		return
	}
	if msg.GetTopic() == TopicStatus && hb.IntervalMS > 0 {
		return // a newer node's copy for older nodes: its status/2 round is the one read
	}
	s.cfg.Received.Inc()
	s.claimDomains(msg.ReceivedFrom, hb.PeerID, hb.Domains)
	h := heard{beat: *hb}
	if len(hb.Health) > 0 {
		// A refresh slice this node stored as it is costs nothing; the
		// changed entries always differ from what the last rounds said.
		// A slice counts as stored once queued (the same one again
		// meanwhile is not written twice), and is forgotten if its write
		// fails.
		h.health = healthByID(hb.Health)
		if hb.Slice != nil {
			if h.sum = sliceHash(hb); s.hb.sliceKnown(hb.PeerID, hb.Slice, h.sum) {
				h.health = nil
			} else {
				h.slice = hb.Slice
				s.hb.sliceStored(hb.PeerID, hb.Slice, h.sum)
			}
		}
	}
	if s.heardq == nil { // no heard loop (a node without a network, tests): at once
		s.recordHeard(ctx, []heard{h})
		return
	}
	s.queueHeard(ctx, h)
}

// checkHeartbeat2 checks the fields of agentsite/status/2: an interval
// within bounds, a digest, and a refresh slice that places itself.
func checkHeartbeat2(hb *agent.Heartbeat) error {
	if hb.IntervalMS <= 0 || hb.IntervalMS > agent.MaxHeartbeatInterval.Milliseconds() || len(hb.Digest) > 16 {
		return errors.New("heartbeat interval or digest out of range")
	}
	if sl := hb.Slice; sl != nil && (sl.Count <= 0 || sl.Index < 0 || sl.Index >= sl.Count || sl.Count > maxSlices) {
		return errors.New("heartbeat slice out of range")
	}
	return nil
}

// decodeHeartbeat opens a heartbeat signed by author (GossipSub checked the
// signature) and checks every field, its health entries included.
func decodeHeartbeat(data []byte, author peer.ID, now time.Time) (*agent.Heartbeat, error) {
	if len(data) > maxHeartbeatBytes {
		return nil, fmt.Errorf("%w: heartbeat of %d bytes, limit %d", agent.ErrTooLarge, len(data), maxHeartbeatBytes)
	}
	var hb agent.Heartbeat
	if err := json.Unmarshal(data, &hb); err != nil {
		return nil, fmt.Errorf("decode heartbeat: %w", err)
	}
	if hb.PeerID != author.String() {
		return nil, fmt.Errorf("heartbeat for %s signed by %s", hb.PeerID, author)
	}
	if hb.SentAt.After(now.Add(agent.ClockSkew)) || hb.SentAt.Before(now.Add(-10*time.Minute)) {
		return nil, errors.New("heartbeat time out of range")
	}
	if len(hb.Addrs) > maxHeartbeatAddrs || len(hb.Version) > 64 || hb.AgentsHosted < 0 || hb.AgentsHosted > 1_000_000 {
		return nil, errors.New("heartbeat fields out of range")
	}
	if err := agent.CheckNodeName(hb.Name); err != nil {
		return nil, fmt.Errorf("heartbeat name %q: %w", hb.Name, err)
	}
	if err := agent.CheckHeartbeatDomains(hb.Domains); err != nil {
		return nil, fmt.Errorf("heartbeat domains: %w", err)
	}
	// An address no one should be sent to is dropped, not the round: its
	// liveness and health still hold (agent.CheckAnnouncedAddr).
	hb.Addrs, _ = agent.AnnouncedAddrs(hb.Addrs)
	if err := checkHealth(hb.Health, author, now); err != nil {
		return nil, err
	}
	return &hb, nil
}

// heartbeatAddrs is the addresses a heartbeat carries: at most
// maxHeartbeatAddrs, HTTP transport addresses first (--public-url's, or
// one announced: other nodes' ARD referrals read them), so that a host
// with many interfaces does not cut them off.
func heartbeatAddrs(addrs []string) []string {
	isHTTP := func(a string) bool {
		return strings.Contains(a+"/", "/http/") || strings.Contains(a+"/", "/https/")
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if isHTTP(a) {
			out = append(out, a)
		}
	}
	for _, a := range addrs {
		if !isHTTP(a) {
			out = append(out, a)
		}
	}
	return out[:min(len(out), maxHeartbeatAddrs)]
}
