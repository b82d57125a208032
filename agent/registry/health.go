package registry

import (
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
)

// HealthOptions tune a Health tracker; zero values take the defaults.
type HealthOptions struct {
	// Window is what success_rate and latency_ms summarise. Default 1h.
	Window time.Duration
	// Recent is what the state judges: failures in it make an agent
	// degraded, and most turns failing in it make it failing; older ones
	// only lower its success rate. Default 10m (ten probes at the default
	// interval), at most Window.
	Recent time.Duration
	// SlowAfter: a median answer time over Recent above it is degraded.
	// Default 5s.
	SlowAfter time.Duration
	// FailingProbes: that many probes failing in a row is failing.
	// Default 3.
	FailingProbes int
	// MinTurns: real turns in Recent before "most of them failed" makes an
	// agent failing (one bad turn is only degraded). Default 3.
	MinTurns int
	// MaxSamples bounds the outcomes kept per agent; a busy agent's window
	// is then its last MaxSamples outcomes. Default 512 (at most 20 KiB an
	// agent; an hour of probes alone is 60 samples, 2.4 KiB).
	MaxSamples int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Defaults of HealthOptions.
const (
	DefaultHealthWindow  = time.Hour
	DefaultHealthRecent  = 10 * time.Minute
	DefaultSlowAfter     = 5 * time.Second
	DefaultFailingProbes = 3
	DefaultMinTurns      = 3
	DefaultMaxSamples    = 512
)

// Health is what this node has seen of how each of its own agents answers:
// the outcomes of health probes and of real turns, a bounded window of
// them per agent, summarised as agent.Health for the heartbeat and the
// pages. It is safe for concurrent use.
type Health struct {
	opts HealthOptions

	mu     sync.Mutex
	agents map[string]*healthLog
	// used holds each agent's last real turn while it is within Recent
	// (pruned as RecentlyUsed reads it): the few agents people use, kept
	// apart so the prober's every tick reads them without looking at
	// every agent's log.
	used map[string]time.Time
	// spacing is how far apart the prober says one agent's probes are
	// now (SetProbeSpacing): longer than the window on a big host whose
	// probe budget makes a round of all its agents last hours.
	spacing time.Duration
	// gen counts the changes of spacing: a summary kept from an older
	// generation was of another window.
	gen uint64
	// snap is the map Snapshot last handed out, never written again: the
	// same map (and version) while no summary changed, so the heartbeat
	// of an idle host of 100k agents builds none. snapStale says an
	// outcome was recorded or an agent forgotten since; snapUntil is the
	// first time a kept summary may change with nothing recorded (zero:
	// never), snapGen the spacing's generation it was made in.
	snap      map[string]agent.Health
	snapVer   uint64
	snapStale bool
	snapGen   uint64
	snapUntil time.Time
}

// healthLog is one agent's outcomes, oldest first.
type healthLog struct {
	samples   []sample
	lastOK    time.Time
	checked   time.Time
	lastTurn  time.Time     // the last real turn: people use the agent
	failedRun int           // probes failed in a row, up to the last one
	lastErr   string        // the last probe's failure, for the owner; "" after a good probe
	lastProbe time.Time     // the last probe
	gap       time.Duration // between the last two probes
	// builtin: the agent answers in this process and is always up
	// (RecordBuiltin); with nothing else in its window it is healthy as
	// of when it was marked, a summary that does not change, so an idle
	// host's heartbeats carry no health delta for its builtins.
	builtin bool
	// sum is the last summary, kept while nothing was recorded, the
	// spacing is of generation sumGen and the clock is before sumUntil
	// (zero: for ever), the first time the window or the recent part of
	// it loses a sample: the heartbeat asks for every agent's summary
	// every interval, and on a big host almost none of them changed.
	sum      agent.Health
	sumOK    bool
	sumGen   uint64
	sumUntil time.Time
}

// sample is one outcome.
type sample struct {
	at      time.Time
	latency time.Duration
	ok      bool
	probe   bool // an active probe; else a real turn
}

// NewHealth returns an empty tracker.
func NewHealth(o HealthOptions) *Health {
	if o.Window <= 0 {
		o.Window = DefaultHealthWindow
	}
	if o.Recent <= 0 {
		o.Recent = DefaultHealthRecent
	}
	o.Recent = min(o.Recent, o.Window)
	if o.SlowAfter <= 0 {
		o.SlowAfter = DefaultSlowAfter
	}
	if o.FailingProbes <= 0 {
		o.FailingProbes = DefaultFailingProbes
	}
	if o.MinTurns <= 0 {
		o.MinTurns = DefaultMinTurns
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = DefaultMaxSamples
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Health{opts: o, agents: map[string]*healthLog{}, used: map[string]time.Time{}}
}

// RecordTurn counts a real turn of a local agent (chat.Outcomes): ok is
// false only for a failure of the agent's backend.
func (h *Health) RecordTurn(agentID string, ok bool, latency time.Duration) {
	h.record(agentID, sample{latency: latency, ok: ok}, "")
}

// RecordProbe counts a probe of agentID's backend. A probe the caller
// canceled says nothing and is not counted.
func (h *Health) RecordProbe(agentID string, res runtime.ProbeResult) {
	if res.Outcome() == string(agent.CodeCanceled) {
		return
	}
	h.record(agentID, sample{latency: res.Latency, ok: res.OK, probe: true}, res.Message())
}

// RecordBuiltin marks agentID a builtin, up without a probe: recorded
// once as a good probe, and healthy from then on whatever its window
// holds (its real turns still count). Marking it again changes nothing.
func (h *Health) RecordBuiltin(agentID string) {
	h.mu.Lock()
	l := h.agents[agentID]
	marked := l != nil && l.builtin
	h.mu.Unlock()
	if marked {
		return
	}
	h.record(agentID, sample{ok: true, probe: true}, "")
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.agents[agentID]; l != nil {
		l.builtin, l.sumOK, h.snapStale = true, false, true
	}
}

// record appends s (stamped now); a probe also sets the agent's run of
// failures and its last error, errText.
func (h *Health) record(agentID string, s sample, errText string) {
	s.at = h.opts.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.agents[agentID]
	if l == nil {
		l = &healthLog{}
		h.agents[agentID] = l
	}
	if s.probe {
		if !l.lastProbe.IsZero() {
			l.gap = s.at.Sub(l.lastProbe)
		}
		l.lastProbe = s.at
	}
	l.prune(s.at.Add(-h.window(l)))
	if len(l.samples) >= h.opts.MaxSamples {
		l.samples = slices.Delete(l.samples, 0, len(l.samples)-h.opts.MaxSamples+1)
	}
	l.samples = append(l.samples, s)
	l.sumOK, h.snapStale = false, true
	l.checked = s.at
	if !s.probe {
		l.lastTurn = s.at
		h.used[agentID] = s.at
	}
	if s.ok {
		l.lastOK = s.at
	}
	if s.probe {
		l.lastErr = errText
		if s.ok {
			l.failedRun = 0
		} else {
			l.failedRun++
		}
	}
}

// SetProbeSpacing tells the tracker how far apart the prober now probes
// each agent (Prober: its Interval, or longer when the probe budget
// cannot probe every agent once an Interval).
func (h *Health) SetProbeSpacing(d time.Duration) {
	h.mu.Lock()
	if d != h.spacing {
		h.spacing = d
		h.gen++
	}
	h.mu.Unlock()
}

// window is what l's summary covers: Window, or, when its probes are
// further apart than that (a big host, the budget), 2.2 times their
// spacing (the larger of the last gap between two and what the prober
// says), so that the last probe and the one before are always in it and
// the agent never goes unknown between two probes. h.mu is held.
func (h *Health) window(l *healthLog) time.Duration {
	d := max(l.gap, h.spacing)
	return max(h.opts.Window, 2*d+d/5)
}

// prune drops the samples taken at or before cutoff.
func (l *healthLog) prune(cutoff time.Time) {
	i := 0
	for i < len(l.samples) && !l.samples[i].at.After(cutoff) {
		i++
	}
	if i > 0 {
		l.samples = slices.Delete(l.samples, 0, i)
	}
}

// Summary is what is known of agentID's health: State unknown when
// nothing was recorded in the window; LatencyMS the median time of the
// window's successes (probes and time to a turn's first text);
// SuccessRate the window's share of successes, to 3 decimals; LastOKAt
// the last success and CheckedAt the last outcome of either kind, kept
// past the window, in UTC whole seconds.
func (h *Health) Summary(agentID string) agent.Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.agents[agentID]
	if l == nil {
		return agent.Health{State: agent.HealthUnknown}
	}
	return h.summary(l, h.opts.Now())
}

// Summaries is the health of every agent with outcomes, by agent id: what
// the node's heartbeat carries. The map is the caller's.
func (h *Health) Summaries() map[string]agent.Health {
	m, _ := h.Snapshot()
	return maps.Clone(m)
}

// Snapshot is Summaries shared: the same map, and the same version, while
// no agent's summary changed (nothing recorded, none forgotten, none
// changed by the clock), a new map and a higher version when one did. The
// map must not be written to. It is what the heartbeat asks for every
// interval: on an idle host of 100k agents it costs a look at the clock.
func (h *Health) Snapshot() (map[string]agent.Health, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.opts.Now()
	if h.snap != nil && !h.snapStale && h.snapGen == h.gen && (h.snapUntil.IsZero() || now.Before(h.snapUntil)) {
		return h.snap, h.snapVer
	}
	same := h.snap != nil && len(h.snap) == len(h.agents)
	var until time.Time
	for id, l := range h.agents {
		s := h.summary(l, now)
		if same {
			old, ok := h.snap[id]
			same = ok && old == s
		}
		if !l.sumUntil.IsZero() && (until.IsZero() || l.sumUntil.Before(until)) {
			until = l.sumUntil
		}
	}
	h.snapStale, h.snapGen, h.snapUntil = false, h.gen, until
	if same {
		return h.snap, h.snapVer
	}
	out := make(map[string]agent.Health, len(h.agents))
	for id, l := range h.agents {
		out[id] = l.sum // just summarized
	}
	h.snap = out
	h.snapVer++
	return out, h.snapVer
}

// LastError is the failure of agentID's last probe in words its owner can
// act on, "" if it succeeded or there was none. It is for the owner only:
// it names the backend's host, which the public record does not.
func (h *Health) LastError(agentID string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.agents[agentID]; l != nil {
		return l.lastErr
	}
	return ""
}

// RecentlyUsed is the agents with a real turn in the recent window: the
// ones people use, which the prober probes first. It reads those agents
// only, not every agent's log.
func (h *Health) RecentlyUsed() map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	cutoff := h.opts.Now().Add(-h.opts.Recent)
	out := make(map[string]bool, len(h.used))
	for id, at := range h.used {
		if !at.After(cutoff) {
			delete(h.used, id)
			continue
		}
		out[id] = true
	}
	return out
}

// Retain forgets the agents not in ids (deleted, or no longer hosted).
func (h *Health) Retain(ids map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.agents {
		if !ids[id] {
			delete(h.agents, id)
			delete(h.used, id)
			h.snapStale = true
		}
	}
}

// Forget forgets agent id (deleted).
func (h *Health) Forget(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.agents[id]; ok {
		delete(h.agents, id)
		h.snapStale = true
	}
	delete(h.used, id)
}

// summary is l's health at now, computed again only when it may have
// changed since it was last; h.mu is held.
func (h *Health) summary(l *healthLog, now time.Time) agent.Health {
	if l.sumOK && l.sumGen == h.gen && (l.sumUntil.IsZero() || now.Before(l.sumUntil)) {
		return l.sum
	}
	l.sum = h.summarize(l, now)
	l.sumOK, l.sumGen, l.sumUntil = true, h.gen, h.changesAt(l, now)
	return l.sum
}

// changesAt is the first time after now at which l's summary changes
// with nothing recorded (zero: never): when its oldest sample leaves the
// window, or its oldest recent one leaves Recent. Everything else in a
// summary changes only with an outcome (record). l was summarized at now
// (pruned); h.mu is held.
func (h *Health) changesAt(l *healthLog, now time.Time) time.Time {
	if len(l.samples) == 0 {
		return time.Time{}
	}
	at := l.samples[0].at.Add(h.window(l))
	cutoff := now.Add(-h.opts.Recent)
	if i := slices.IndexFunc(l.samples, func(s sample) bool { return s.at.After(cutoff) }); i >= 0 {
		at = minTime(at, l.samples[i].at.Add(h.opts.Recent))
	}
	return at
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// summarize computes l's health at now; h.mu is held.
func (h *Health) summarize(l *healthLog, now time.Time) agent.Health {
	l.prune(now.Add(-h.window(l)))
	out := agent.Health{State: agent.HealthUnknown, LastOKAt: stamp(l.lastOK), CheckedAt: stamp(l.checked)}
	if len(l.samples) == 0 {
		if l.builtin {
			out.State, out.SuccessRate = agent.HealthHealthy, 1
		}
		return out
	}
	okCount := 0
	for _, s := range l.samples {
		if s.ok {
			okCount++
		}
	}
	out.SuccessRate = math.Round(float64(okCount)/float64(len(l.samples))*1000) / 1000
	out.LatencyMS = int(median(l.samples).Round(time.Millisecond) / time.Millisecond)
	recent := l.samples
	cutoff := now.Add(-h.opts.Recent)
	if i := slices.IndexFunc(l.samples, func(s sample) bool { return s.at.After(cutoff) }); i >= 0 {
		recent = l.samples[i:]
	} // else nothing recent: judge by the window
	out.State = h.judge(l, recent)
	return out
}

// judge is the state, from the run of failed probes and the recent
// outcomes.
func (h *Health) judge(l *healthLog, recent []sample) string {
	turns, failedTurns, failed := 0, 0, false
	for _, s := range recent {
		failed = failed || !s.ok
		if !s.probe {
			turns++
			if !s.ok {
				failedTurns++
			}
		}
	}
	switch {
	case l.failedRun >= h.opts.FailingProbes,
		turns >= h.opts.MinTurns && 2*failedTurns > turns:
		return agent.HealthFailing
	case failed || median(recent) > h.opts.SlowAfter:
		return agent.HealthDegraded
	}
	return agent.HealthHealthy
}

// median is the (lower) median latency of the successful samples: a
// failure's time says how fast it failed, not how fast the agent answers.
func median(ss []sample) time.Duration {
	lat := make([]time.Duration, 0, len(ss))
	for _, s := range ss {
		if s.ok {
			lat = append(lat, s.latency)
		}
	}
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[(len(lat)-1)/2]
}

// stamp is t as the heartbeat carries it: UTC, whole seconds (zero stays
// zero).
func stamp(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Second)
}
