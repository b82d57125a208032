package heartbeat

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/agentsite/agentsite/agent"
)

// Heartbeats at planet scale (docs/architecture.md "Heartbeats"): a round
// on agentsite/status/2 carries the sender's interval, a digest of its
// health state and only the entries that changed since its last round;
// every refreshEvery rounds it also carries, in turn, slices of the whole
// state (refreshSlices of them), so a node that missed a change or just
// joined has it within one cycle, and its addresses and hosted count.
const (
	// refreshEvery is how many rounds apart the refresh rounds are (one a
	// minute at the default interval).
	refreshEvery = 6
	// refreshSlices is the slices of the whole health state one refresh
	// round carries: 1,024 entries, so a mirror learns a host of 100,000
	// agents in 98 refresh rounds.
	refreshSlices = 8
	// maxDeltaParts bounds the messages of changed entries in one round;
	// the rest waits for the next round (and is in the refresh anyway).
	maxDeltaParts = 32
	// oldNodesFor is how long after this node last heard a heartbeat of an
	// older node (agentsite/status/1 only) it keeps publishing its own
	// there too, at HeartbeatInterval.
	oldNodesFor = 10 * time.Minute
	// countedFor is how recently a node must have been heard to count in
	// the planet's size (three of the longest intervals).
	countedFor = 3 * agent.MaxHeartbeatInterval
	// maxSlices bounds the slices of one sender's whole state: 1,000,000
	// agents (agents_hosted's bound) in slices of agent.MaxHeartbeatHealth.
	maxSlices = 7813
	// maxSliceMemory bounds the refresh slices remembered, all senders
	// together (16 bytes each); past it they are forgotten, and stored
	// again as they come.
	maxSliceMemory = 1 << 20
)

// heartbeatState is this node's side of agentsite/status/2.
type heartbeatState struct {
	topic *pubsub.Topic // agentsite/status/2 (Service.Start)

	mu       sync.Mutex
	beats    *beats              // rounds accepted per author on status/2 (status/1 keeps Service.beats)
	sent     map[string]sentItem // what the rounds told of each agent
	unhosted map[string]uint64   // ids the source has that this node does not host, by the hash of their health then
	digest   agent.HealthDigest  // of sent
	round    int                 // rounds sent
	cursor   int                 // the next refresh slice
	hosted   int                 // agents_hosted, counted in refresh rounds
	addrs    []string            // the addresses last sent
	oldHeard time.Time           // an older node's heartbeat was last heard then
	slices   map[string]map[int]uint64
	nslices  int // entries in slices

	// The state the rounds are built from, kept by heartbeatStateLoop off
	// the send path (keeper set): the hosted count, and the names of the
	// agents whose entries are new to the rounds. A round is built from
	// memory alone, so a slow or stalled store never delays one. Without
	// a keeper (a node without a network, tests) buildRound reads the
	// store itself.
	keeper    bool
	wake      chan struct{}           // the keeper has work (names to look up, own health to write)
	want      map[string]bool         // ids whose names the next look-up reads
	looked    map[string]string       // names looked up for the rounds, by id; "": not hosted here
	dirty     bool                    // own records changed since hosted was counted
	counted   bool                    // hosted was counted once
	ownHealth map[string]agent.Health // this node's changed entries, for its own store
}

// maxPendingNames bounds the ids waiting for a name look-up, and the names
// looked up waiting for a round: a few rounds' worth of new entries.
const maxPendingNames = 4 * maxDeltaParts * agent.MaxHeartbeatHealth

// recountEvery is how many intervals apart the keeper recounts the hosted
// agents when no own record changed (10 minutes at the default interval).
const recountEvery = 60

// keeperTimeout bounds one store call of the heartbeat state's keeper: a
// call that fails is tried again at its next run.
const keeperTimeout = 30 * time.Second

// sentItem is an agent's entry as the heartbeats last told it.
type sentItem struct {
	entry agent.HostedHealth
	hash  uint64
}

// rounds is the status/2 rounds accepted per author.
func (s *heartbeatState) rounds() *beats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	return s.beats
}

func (s *heartbeatState) init() {
	if s.beats == nil {
		s.beats = newBeats()
		s.sent = map[string]sentItem{}
		s.unhosted = map[string]uint64{}
		s.slices = map[string]map[int]uint64{}
	}
}

// startKeeper makes the rounds read the state heartbeatStateLoop keeps,
// never the store.
func (s *heartbeatState) startKeeper() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	s.keeper = true
	s.wake = make(chan struct{}, 1)
	s.want = map[string]bool{}
	s.looked = map[string]string{}
}

// ownChanged notes that one of this node's records changed (published,
// updated, deleted): the keeper recounts the hosted agents at its next run.
func (s *heartbeatState) ownChanged() {
	s.mu.Lock()
	s.dirty = true
	s.mu.Unlock()
}

// poke wakes the keeper if it sleeps; s.mu need not be held.
func (s *heartbeatState) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// heartbeatStateLoop keeps what the rounds are built from
// (keepHeartbeatState): at once, whenever a round asks for names or has
// own health to store, and every HeartbeatInterval, recounting the hosted
// agents when own records changed and every recountEvery intervals
// anyway (a count is cheap, but an idle node should not pay it often). It is
// the only heartbeat code that reads or writes the store, so a store held
// up by imports, probes or sync delays the names of new entries and the
// count, never a round.
func (s *Service) heartbeatStateLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	ticks := 0
	for {
		s.keepHeartbeatState(ctx, ticks%recountEvery == 0)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ticks++
		case <-s.hb.wake:
		}
	}
}

// keepHeartbeatState runs the keeper once: the names the rounds asked
// for, the hosted count if recount or own records changed (or it was
// never counted), and this node's own changed health into its store.
func (s *Service) keepHeartbeatState(ctx context.Context, recount bool) {
	st := &s.hb
	st.mu.Lock()
	ids := make([]string, 0, len(st.want))
	for id := range st.want {
		ids = append(ids, id)
	}
	clear(st.want)
	count := recount || st.dirty || !st.counted
	st.dirty = false
	health := st.ownHealth
	st.ownHealth = nil
	st.mu.Unlock()

	fail := func(what string, err error) {
		if ctx.Err() == nil {
			s.logger.Warn(what+"; the heartbeats go on and it is tried again", "err", err)
		}
	}
	if len(ids) > 0 {
		slices.Sort(ids)
		cctx, cancel := context.WithTimeout(ctx, keeperTimeout)
		names, err := s.cfg.Store.LocalNames(cctx, ids)
		cancel()
		if err != nil {
			fail("reading the names of local agents for the heartbeat failed", err)
		} else {
			st.mu.Lock()
			if len(st.looked)+len(ids) > maxPendingNames {
				clear(st.looked) // asked for entries that went away meanwhile
			}
			for _, id := range ids {
				st.looked[id] = names[id]
			}
			st.mu.Unlock()
		}
	}
	if count {
		cctx, cancel := context.WithTimeout(ctx, keeperTimeout)
		hosted, err := s.cfg.Store.LocalCount(cctx)
		cancel()
		st.mu.Lock()
		if err != nil {
			st.dirty = true
		} else {
			st.hosted, st.counted = hosted, true
		}
		st.mu.Unlock()
		if err != nil {
			fail("counting local agents for the heartbeat failed", err)
		}
	}
	if len(health) > 0 {
		cctx, cancel := context.WithTimeout(ctx, keeperTimeout)
		err := s.cfg.Store.SetHealth(cctx, s.self, health)
		cancel()
		if err != nil {
			fail("storing the health of local agents failed", err)
		}
	}
}

// storeOwnHealth hands the entries a round sent to the keeper, which
// writes them into this node's own store (its read loop skips its own
// heartbeats); without a keeper it writes them at once.
func (s *Service) storeOwnHealth(ctx context.Context, delta []agent.HostedHealth) {
	if len(delta) == 0 {
		return
	}
	st := &s.hb
	st.mu.Lock()
	if !st.keeper {
		st.mu.Unlock()
		if err := s.cfg.Store.SetHealth(ctx, s.self, healthByID(delta)); err != nil && ctx.Err() == nil {
			s.logger.Warn("storing the health of local agents failed", "err", err)
		}
		return
	}
	if st.ownHealth == nil {
		st.ownHealth = make(map[string]agent.Health, len(delta))
	}
	for _, e := range delta { // the latest wins; bounded by the hosted agents
		st.ownHealth[e.ID] = e.Health
	}
	st.mu.Unlock()
	st.poke()
}

// heartbeatInterval is the interval of this node's next round: the nodes
// it hears on agentsite/status/2 that count (beats.counted: hosts of
// listings held here, and authors heard for longer than settledAfter)
// over HeartbeatBudget, within HeartbeatInterval and
// agent.MaxHeartbeatInterval. While an older node is heard it is
// HeartbeatInterval: older nodes judge silence by their own interval.
func (s *Service) heartbeatInterval(now time.Time) time.Duration {
	base := s.cfg.Interval
	s.hb.mu.Lock()
	old := !s.hb.oldHeard.IsZero() && now.Sub(s.hb.oldHeard) < oldNodesFor
	s.hb.mu.Unlock()
	if old {
		return base
	}
	heard := s.hb.rounds().counted(now, settledAfter, s.cfg.Hosts.Holds) + 1 // and this node
	want := time.Duration(float64(heard) / s.cfg.Budget * float64(time.Second))
	return min(max(base, want), max(base, agent.MaxHeartbeatInterval))
}

// settledAfter is how long a heartbeat author that hosts nothing this
// node holds must have been heard before it counts in the planet's size
// (heartbeatInterval): the longest interval. Heartbeats are cheap to sign
// for endless fresh identities; counted at once, 200 of them heartbeating
// for a minute made a node declare a 20 times longer interval, so that
// honest hosts were judged stale only 20 times later. An honest node is
// heard for longer than that, or hosts listings held here, and counts.
const settledAfter = agent.MaxHeartbeatInterval

// oldNodeHeard notes a heartbeat of an older node: this node publishes on
// agentsite/status/1 too, for oldNodesFor.
func (s *Service) oldNodeHeard(now time.Time) {
	s.hb.mu.Lock()
	s.hb.oldHeard = now
	s.hb.mu.Unlock()
}

func (s *Service) publishV1() bool {
	s.hb.mu.Lock()
	defer s.hb.mu.Unlock()
	return !s.hb.oldHeard.IsZero() && s.now().Sub(s.hb.oldHeard) < oldNodesFor
}

// heartbeatRound is one round's messages before encoding.
type heartbeatRound struct {
	base   agent.Heartbeat
	delta  []agent.HostedHealth   // the entries that changed, in id order
	slices [][]agent.HostedHealth // refresh slices, with their indexes
	first  int                    // the index of slices[0]
	count  int                    // how many slices the whole state has
}

// buildRound works out this round: the entries of health (the hosted
// agents' summaries, by id) that changed since the last rounds told them,
// the names of those read from the cache (never every hosted listing),
// and on a refresh round the count of hosted agents and slices of the
// whole. It updates what was sent as if the round is published.
func (s *Service) buildRound(ctx context.Context, base agent.Heartbeat, health map[string]agent.Health, addrs []string) (heartbeatRound, error) {
	st := &s.hb
	st.mu.Lock()
	st.init()
	refresh := st.round%refreshEvery == 0
	st.round++
	var changed []string
	for id, h := range health {
		h, ok := normalizeHealth(h)
		if !ok {
			continue
		}
		prev, had := st.sent[id]
		if had && prev.entry.Health == h {
			continue // as sent: no hash (one was ~6 allocations, every agent every round)
		}
		if had && prev.hash == agent.EntryHash(agent.HostedHealth{ID: id, Name: prev.entry.Name, Health: h}) {
			continue
		}
		if v, ok := st.unhosted[id]; ok && v == agent.EntryHash(agent.HostedHealth{ID: id, Health: h}) {
			continue // looked up already, not hosted here: again only when its health changes
		}
		changed = append(changed, id)
	}
	for id := range st.unhosted {
		if _, ok := health[id]; !ok {
			delete(st.unhosted, id)
		}
	}
	for id, it := range st.sent { // agents no longer hosted, or no longer known
		if _, ok := health[id]; !ok {
			st.digest ^= agent.HealthDigest(it.hash)
			delete(st.sent, id)
		}
	}
	keeper := st.keeper
	st.mu.Unlock()
	slices.Sort(changed)
	changed = changed[:min(len(changed), maxDeltaParts*agent.MaxHeartbeatHealth)]

	var r heartbeatRound
	var names map[string]string
	var (
		hosted int
		err    error
	)
	if ids := s.unnamed(changed); len(ids) > 0 {
		if keeper {
			s.hb.ask(ids) // named by the keeper, sent in a round after it
		} else if names, err = s.cfg.Store.LocalNames(ctx, ids); err != nil {
			return r, err
		}
	}
	if refresh && !keeper {
		if hosted, err = s.cfg.Store.LocalCount(ctx); err != nil {
			return r, err
		}
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	for _, id := range changed {
		name, known := names[id], !keeper // without a keeper every name was just read
		if prev, ok := st.sent[id]; ok {
			name, known = prev.entry.Name, true
		} else if keeper {
			if name, known = st.looked[id]; known {
				delete(st.looked, id)
			}
		}
		if !known {
			continue // its name is being looked up: it stays changed until then
		}
		h, _ := normalizeHealth(health[id])
		if name == "" {
			st.unhosted[id] = agent.EntryHash(agent.HostedHealth{ID: id, Health: h})
			continue // not hosted here (deleted): said no more
		}
		delete(st.unhosted, id)
		e := agent.HostedHealth{ID: id, Name: name, Health: h}
		if prev, ok := st.sent[id]; ok {
			st.digest ^= agent.HealthDigest(prev.hash)
		}
		it := sentItem{entry: e, hash: agent.EntryHash(e)}
		st.sent[id] = it
		st.digest ^= agent.HealthDigest(it.hash)
		r.delta = append(r.delta, e)
	}
	if refresh && !keeper {
		st.hosted = hosted
	}
	base.AgentsHosted = st.hosted
	base.Digest = st.digest.String()
	if refresh || !slices.Equal(addrs, st.addrs) {
		base.Addrs = addrs
		st.addrs = addrs
	} else {
		base.Addrs = nil
	}
	r.base = base
	if refresh && len(st.sent) > 0 {
		all := make([]agent.HostedHealth, 0, len(st.sent))
		for _, it := range st.sent {
			all = append(all, it.entry)
		}
		slices.SortFunc(all, func(a, b agent.HostedHealth) int { return cmp.Compare(a.ID, b.ID) })
		r.count = (len(all) + agent.MaxHeartbeatHealth - 1) / agent.MaxHeartbeatHealth
		if st.cursor >= r.count {
			st.cursor = 0
		}
		r.first = st.cursor
		for i := 0; i < min(refreshSlices, r.count); i++ {
			k := (st.cursor + i) % r.count
			r.slices = append(r.slices, all[k*agent.MaxHeartbeatHealth:min(len(all), (k+1)*agent.MaxHeartbeatHealth)])
		}
		st.cursor = (st.cursor + len(r.slices)) % r.count
	}
	return r, nil
}

// unnamed is those of ids whose names the rounds do not know yet (nor
// hold from the keeper, waiting for this round).
func (s *Service) unnamed(ids []string) []string {
	s.hb.mu.Lock()
	defer s.hb.mu.Unlock()
	var out []string
	for _, id := range ids {
		if _, ok := s.hb.sent[id]; ok {
			continue
		}
		if _, ok := s.hb.looked[id]; ok {
			continue
		}
		out = append(out, id)
	}
	return out
}

// ask queues ids for the keeper's next name look-up and wakes it.
func (s *heartbeatState) ask(ids []string) {
	s.mu.Lock()
	for _, id := range ids {
		if len(s.want) >= maxPendingNames {
			break // the rest are asked for again by the next rounds
		}
		s.want[id] = true
	}
	s.mu.Unlock()
	s.poke()
}

// messages encodes the round: the changed entries as few messages as fit
// (or one message without health), then one message per refresh slice.
// Every message is a whole heartbeat, whichever arrives.
func (r heartbeatRound) messages() ([][]byte, error) {
	var out [][]byte
	if len(r.delta) > 0 || len(r.slices) == 0 {
		parts, err := splitHeartbeat(r.base, r.delta)
		if err != nil {
			return nil, err
		}
		out = append(out, parts...)
	}
	for i, sl := range r.slices {
		hb := r.base
		hb.Slice = &agent.HealthSlice{Index: (r.first + i) % r.count, Count: r.count}
		parts, err := splitHeartbeat(hb, sl)
		if err != nil {
			return nil, err
		}
		out = append(out, parts...)
	}
	return out, nil
}

// sliceKnown reports whether the refresh slice of author that hb carries
// is the one this node stored last time (then it is not written again).
// sliceStored remembers it once stored.
func (s *heartbeatState) sliceKnown(author string, sl *agent.HealthSlice, h uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	m := s.slices[author]
	v, ok := m[sl.Index]
	return ok && v == h
}

func (s *heartbeatState) sliceStored(author string, sl *agent.HealthSlice, h uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if s.nslices >= maxSliceMemory {
		clear(s.slices)
		s.nslices = 0
	}
	m := s.slices[author]
	if m == nil {
		m = map[int]uint64{}
		s.slices[author] = m
	}
	if _, ok := m[sl.Index]; !ok {
		s.nslices++
	}
	m[sl.Index] = h
}

// sliceForget forgets a refresh slice whose write failed: it is written
// when it comes again.
func (s *heartbeatState) sliceForget(author string, sl *agent.HealthSlice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.slices[author]; m != nil {
		if _, ok := m[sl.Index]; ok {
			delete(m, sl.Index)
			s.nslices--
		}
	}
}

// sliceHash is the content of a refresh slice, with its place.
func sliceHash(hb *agent.Heartbeat) uint64 {
	h := uint64(hb.Slice.Count)<<32 ^ uint64(hb.Slice.Index)
	for _, e := range hb.Health {
		h ^= agent.EntryHash(e)
	}
	return h
}
