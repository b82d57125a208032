package heartbeat

import (
	"context"

	"github.com/agentsite/agentsite/agent"
)

// Receipt writes of heartbeats, batched (docs/architecture.md "Idle
// cost"): the read loop hands each accepted heartbeat to the heard loop,
// which records at once every heartbeat waiting (at most heardBatch) in
// one call, HeardAll, which the store runs as one transaction for those
// that change anything. No heartbeat waits for a window: while one batch
// is written the next gathers, so the writes per second are bounded by
// the store's speed, not by the planet's heartbeats. A heartbeat that
// changes nothing still costs no write.
const (
	heardBatch = 256
	heardQueue = 1024 // accepted heartbeats waiting; past it the read loop waits
)

// Batcher is a Store that records many heartbeats at once: as
// NodeSeen and, where health[i] has entries, SetHealth would one after
// the other, in order, but those that write do so in one transaction
// (store.Sink). errs[i] is beats[i]'s outcome.
type Batcher interface {
	HeardAll(ctx context.Context, beats []agent.Heartbeat, health []map[string]agent.Health) (errs []error)
}

// heard is an accepted heartbeat on its way to the store, with the
// refresh slice it carries (remembered once stored).
type heard struct {
	beat   agent.Heartbeat
	health map[string]agent.Health // the entries to write (nil: none)
	slice  *agent.HealthSlice
	sum    uint64
}

// heardLoop records the queued heartbeats: each time, all that wait.
func (s *Service) heardLoop(ctx context.Context) {
	batch := make([]heard, 0, heardBatch)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return
		case h := <-s.heardq:
			batch = append(batch, h)
		}
	gather:
		for len(batch) < heardBatch {
			select {
			case h := <-s.heardq:
				batch = append(batch, h)
			default:
				break gather
			}
		}
		s.recordHeard(ctx, batch)
	}
}

// recordHeard writes a batch: in one HeardAll when the cache has it, else
// one heartbeat after the other.
func (s *Service) recordHeard(ctx context.Context, batch []heard) {
	errs := make([]error, len(batch))
	if hb, ok := s.cfg.Store.(Batcher); ok {
		beats, health := make([]agent.Heartbeat, len(batch)), make([]map[string]agent.Health, len(batch))
		for i, h := range batch {
			beats[i], health[i] = h.beat, h.health
		}
		errs = hb.HeardAll(ctx, beats, health)
	} else {
		for i, h := range batch {
			if err := s.cfg.Store.NodeSeen(ctx, h.beat); err != nil {
				errs[i] = err
			}
			if len(h.health) > 0 {
				if err := s.cfg.Store.SetHealth(ctx, h.beat.PeerID, h.health); err != nil {
					errs[i] = err
				}
			}
		}
	}
	for i, h := range batch {
		if i < len(errs) && errs[i] != nil {
			if h.slice != nil {
				s.hb.sliceForget(h.beat.PeerID, h.slice)
			}
			if ctx.Err() == nil {
				s.logger.Warn("recording a heartbeat failed", "peer", h.beat.PeerID, "err", errs[i])
			}
		}
	}
}

// queueHeard hands an accepted heartbeat to the heard loop.
func (s *Service) queueHeard(ctx context.Context, h heard) {
	select {
	case s.heardq <- h:
	case <-ctx.Done():
	}
}
