package catalogsync

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Sync rounds, for the metrics: why a sync with a peer ran.
const (
	// syncRoundFirst is the first sync with a peer after it connected.
	syncRoundFirst = "first"
	// syncRoundPeriodic is a later sync of the peer's loop (repair).
	syncRoundPeriodic = "periodic"
	// syncRoundRetry is a sync tried again because admission refused
	// records of the round before (its hosts were not heard yet).
	syncRoundRetry = "retry"
	// syncRoundOther is a sync not started by a peer's loop (SyncFrom).
	syncRoundOther = "other"
)

// Sync request kinds.
const (
	syncKindHead = "head" // limit 0: the feed's id and head only
	syncKindPage = "page" // a page of one shard's changes
	// syncKindDigest is a page of one shard's changes as digests.
	syncKindDigest = "digest"
	// syncKindWant asks for the envelopes a digest page offered that this
	// node lacks.
	syncKindWant = "want"
)

// syncMetrics counts the catalogue sync's requests, the bytes of their
// answers and what became of the records pulled, so that an operator (and
// the idle benchmarks) can tell an idle round, which should be one head
// request, from pages pulled again and again.
type syncMetrics struct {
	requests *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	records  *prometheus.CounterVec
	// peers is the same per peer, bounded (peers.go): the metrics
	// have no peer label, since peers come and go without end.
	peers *peerSyncTable
}

func newSyncMetrics() syncMetrics {
	return syncMetrics{
		peers: newPeerSyncTable(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "sync_requests_total",
			Help: "Catalogue sync requests this node sent, by kind (head: the feed's head only; page: a page of one shard's changes; digest: such a page as digests; want: the envelopes of a digest page this node lacks; own: a page of the listings the peer hosts, as digests) and round (first: on connection; periodic: the repair loop; retry: after admission refused records; other).",
		}, []string{"kind", "round"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "sync_received_bytes_total",
			Help: "Bytes of catalogue sync answers this node read, by kind (head, page, digest, want, own) and round (first, periodic, retry, other).",
		}, []string{"kind", "round"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "sync_records_total",
			Help: "Records catalogue sync pulled, by result (new: changed the cache; known: transferred though already held; held: offered as a digest and not transferred, as held here; raced: asked for as lacking, but gossip brought it while the answer came; outdated: an older seq than one seen; refused: over an admission quota; invalid) and round.",
		}, []string{"result", "round"}),
	}
}

// SyncCounts is what the catalogue sync of a node did so far: requests,
// bytes of answers read and records pulled, each keyed "label/round" (e.g.
// "page/periodic", "known/retry"). The benchmarks read it per window.
type SyncCounts struct {
	Requests map[string]int64
	Bytes    map[string]int64
	Records  map[string]int64
}

// Counts returns the node's catalogue sync counters.
func (n *Service) Counts() SyncCounts {
	m := n.metrics
	return SyncCounts{Requests: vecCounts(m.requests), Bytes: vecCounts(m.bytes), Records: vecCounts(m.records)}
}

// vecCounts reads a counter vector with two labels into "a/b" keys.
func vecCounts(v *prometheus.CounterVec) map[string]int64 {
	out := map[string]int64{}
	ch := make(chan prometheus.Metric)
	go func() {
		v.Collect(ch)
		close(ch)
	}()
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil || d.Counter == nil {
			continue
		}
		key := ""
		for i, l := range d.Label {
			if i > 0 {
				key += "/"
			}
			key += l.GetValue()
		}
		out[key] += int64(d.Counter.GetValue())
	}
	return out
}
