package intake

import (
	"net"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Peer scoring is opt-in in go-libp2p-pubsub; these are our explicit
// parameters. The one that matters most: every invalid message (forged,
// replayed, oversized, expired, mis-keyed) costs the sender heavily and
// decays slowly, so a peer that floods bad records drops below the graylist
// threshold after a handful and is ignored, then pruned.
//
// app is the application-specific score: minus the admission penalty that
// over-quota records and floods of valid messages earn (Intake.Refuse), so a
// peer that floods valid records sinks below the graylist threshold as one
// that sends invalid ones does.
func ScoreParams(app func(peer.ID) float64, topics ...string) *pubsub.PeerScoreParams {
	p := &pubsub.PeerScoreParams{
		Topics:            map[string]*pubsub.TopicScoreParams{},
		TopicScoreCap:     100,
		AppSpecificScore:  app,
		AppSpecificWeight: 1,
		// Many honest nodes can share an IP (NAT, loopback in tests).
		IPColocationFactorWeight:    -5,
		IPColocationFactorThreshold: 10,
		IPColocationFactorWhitelist: loopbackNets(),
		BehaviourPenaltyWeight:      -10,
		BehaviourPenaltyThreshold:   6,
		BehaviourPenaltyDecay:       pubsub.ScoreParameterDecay(10 * time.Minute),
		DecayInterval:               time.Second,
		DecayToZero:                 0.01,
		RetainScore:                 10 * time.Minute,
	}
	for _, t := range topics {
		p.Topics[t] = &pubsub.TopicScoreParams{
			TopicWeight:                    1,
			TimeInMeshWeight:               0.01,
			TimeInMeshQuantum:              time.Second,
			TimeInMeshCap:                  100,
			FirstMessageDeliveriesWeight:   1,
			FirstMessageDeliveriesDecay:    pubsub.ScoreParameterDecay(10 * time.Minute),
			FirstMessageDeliveriesCap:      50,
			InvalidMessageDeliveriesWeight: -100,
			InvalidMessageDeliveriesDecay:  pubsub.ScoreParameterDecay(time.Hour),
		}
	}
	return p
}

// ScoreThresholds: below -10 no gossip to/from the peer, below -50 no
// publishing to it, below -80 everything from it is ignored (graylist).
func ScoreThresholds() *pubsub.PeerScoreThresholds {
	return &pubsub.PeerScoreThresholds{
		GossipThreshold:             -10,
		PublishThreshold:            -50,
		GraylistThreshold:           -80,
		AcceptPXThreshold:           10,
		OpportunisticGraftThreshold: 3,
	}
}

func loopbackNets() []*net.IPNet {
	var out []*net.IPNet
	for _, s := range []string{"127.0.0.0/8", "::1/128"} {
		_, n, _ := net.ParseCIDR(s)
		out = append(out, n)
	}
	return out
}

// ScoreInspectPeriod is how often the GossipSub peer scores are copied out
// for PeerScore; scores themselves decay every second (DecayInterval).
const ScoreInspectPeriod = time.Second

// Scores holds the latest snapshot of GossipSub peer scores.
type Scores struct {
	mu sync.RWMutex
	m  map[peer.ID]float64
}

// Set takes a snapshot (pubsub.WithPeerScoreInspect).
func (s *Scores) Set(m map[peer.ID]float64) {
	s.mu.Lock()
	s.m = m
	s.mu.Unlock()
}

// Get is p's score as of the last snapshot, and whether the router
// tracks p at all.
func (s *Scores) Get(p peer.ID) (float64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.m[p]
	return v, ok
}
