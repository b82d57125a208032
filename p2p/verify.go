package p2p

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p/intake"
)

// seqCache remembers the highest seq seen per agent id, so a replayed older
// record is recognised without a store round trip. It is bounded: when full,
// it is cleared (the store's seq rule still protects the cache).
type seqCache struct {
	mu  sync.Mutex
	max int
	m   map[string]uint64
}

func newSeqCache(max int) *seqCache {
	return &seqCache{max: max, m: make(map[string]uint64)}
}

// check reports intake.ErrReplay if seq is lower than the highest seen for id, and
// records seq otherwise. An equal seq is a duplicate, not an attack.
func (c *seqCache) check(id string, seq uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.m[id]; ok && seq < prev {
		return fmt.Errorf("%w (%d < %d)", intake.ErrReplay, seq, prev)
	}
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[id] = seq
	return nil
}

// verifyRecord opens an envelope from the network. sender, if set, must be
// the record's publisher (gossip: only a host announces its own records).
func verifyRecord(env []byte, sender peer.ID, now time.Time) (*agent.Record, error) {
	rec, err := agent.Open(env, now)
	if err != nil {
		return nil, err
	}
	if err := checkHost(rec); err != nil {
		return nil, err
	}
	if sender != "" && rec.Publisher != sender.String() {
		return nil, fmt.Errorf("%w: from %s, publisher %s", intake.ErrWrongSender, sender, rec.Publisher)
	}
	return rec, nil
}

// checkHost refuses a record whose libp2p-mcp endpoint names a node other
// than its publisher. The node that signs a listing is the node that hosts
// it (docs/architecture.md: "the node signs it"); otherwise anyone could list agents
// "hosted" by a node that never published them, which that node would then
// take for its own (local) and everyone would show as alive on its
// heartbeats.
func checkHost(rec *agent.Record) error {
	for _, e := range rec.Endpoints {
		if e.Kind == agent.EndpointLibp2pMCP && e.PeerID != rec.Publisher {
			return fmt.Errorf("%w: publisher %s names %s as host", agent.ErrKeyMismatch, rec.Publisher, e.PeerID)
		}
	}
	return nil
}

// dhtKey is the DHT key of an agent record.
func dhtKey(id string) string { return "/" + dhtNamespace + "/" + id }

const dhtNamespace = "agent"

// recordValidator is the DHT's namespaced validator "agent": a value under
// /agent/<id> must be a valid, unexpired envelope whose record has that id;
// of several, the highest seq wins.
type recordValidator struct {
	now     func() time.Time
	metrics *metrics
}

func (v recordValidator) Validate(key string, value []byte) error {
	_, err := v.open(key, value)
	if err != nil && v.metrics != nil {
		v.metrics.rejected.WithLabelValues(pathDHT, intake.Reason(err)).Inc()
	}
	return err
}

func (v recordValidator) open(key string, value []byte) (*agent.Record, error) {
	id, ok := strings.CutPrefix(key, "/"+dhtNamespace+"/")
	if !ok || !agent.ValidID(id) {
		return nil, fmt.Errorf("%w: bad DHT key %q", agent.ErrInvalidField, key)
	}
	rec, err := agent.Open(value, v.now())
	if err != nil {
		return nil, err
	}
	if err := checkHost(rec); err != nil {
		return nil, err
	}
	if rec.ID != id {
		return nil, fmt.Errorf("%w: record %s stored under key of %s", agent.ErrKeyMismatch, rec.ID, id)
	}
	return rec, nil
}

func (v recordValidator) Select(key string, values [][]byte) (int, error) {
	best, bestSeq := -1, uint64(0)
	for i, val := range values {
		rec, err := v.open(key, val)
		if err != nil {
			continue
		}
		if best == -1 || rec.Seq > bestSeq {
			best, bestSeq = i, rec.Seq
		}
	}
	if best == -1 {
		return 0, errors.New("no valid agent record among the values")
	}
	return best, nil
}
