package agent

import (
	"encoding/json"
	"maps"
	"sync"
)

// Limits of the whole tree of one user message, on every node it reaches
// together. Why: without them, one message to a chain of four delegating
// agents on two nodes, each model asking 8 agents a turn, ran 585 turns
// and 1,170 model calls (TestDelegationTreeBudgetAcrossTwoNodes).
const (
	// TreeTurns is how many delegated turns the tree of one user message
	// may run: also what a trace from a node that predates the budget
	// gets, and the most a trace from another node may bring.
	TreeTurns = 16
	// MaxVisits is how many times one agent may be asked in one trace.
	MaxVisits = 2
)

// Quota is the chat budget of whoever sent a message, on the node where
// it entered: its delegated turns draw from it too, so a client cannot
// spend more turns through agents than by chatting. Surfaces make one from
// their rate budgets (httpkit.Rates.Quota).
type Quota interface {
	// Allow takes one turn now, or reports false when the budget is spent.
	Allow() bool
	// Charge counts n turns that ran already (the part of the tree another
	// node ran): the budget may go into debt.
	Charge(n int)
}

// Refusals of the tree budget: the same errors as the per-turn ones, in
// words that say which limit it was.
var (
	errTreeSpent = ErrDelegationBudget.With(
		"This message has used all the agent turns it may set going; answer with what you have.")
	errQuotaSpent = ErrDelegationBudget.With(
		"Whoever sent this message has no chat turns left for now; answer with what you have.")
	errAskedTwice = ErrDelegationLoop.With(
		"That agent has already been asked twice in this exchange; answer with what you have.")
)

// ledger is a trace's budget on this node, shared by every branch of the
// tree that runs here (copies of a Trace share it): the delegated turns
// left, how often each agent was asked, and whose chat budget pays.
type ledger struct {
	mu    sync.Mutex
	left  int
	asked map[string]int
	quota Quota
}

// spend takes one delegated turn to callee, or says which limit refuses it.
func (l *ledger) spend(callee string) error {
	if l == nil {
		return errTreeSpent // a trace made without NewTrace or TraceFrom: never unlimited
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.asked[callee] >= MaxVisits:
		return errAskedTwice
	case l.left <= 0:
		return errTreeSpent
	case l.quota != nil && !l.quota.Allow():
		return errQuotaSpent
	}
	l.left--
	if l.asked == nil {
		l.asked = map[string]int{}
	}
	l.asked[callee]++
	return nil
}

// Budget is how many more delegated turns the tree may run from here.
func (t Trace) Budget() int {
	if t.tree == nil {
		return 0
	}
	t.tree.mu.Lock()
	defer t.tree.mu.Unlock()
	return t.tree.left
}

// WithQuota is the trace charging its delegated turns on this node to q
// too: the chat budget of whoever sent the message here.
func (t Trace) WithQuota(q Quota) Trace {
	c := t.copyTree(t.Budget())
	c.tree.quota = q
	return c
}

// Handoff splits the budget for a part of the tree that runs elsewhere
// (another node, an external agent): the trace to send, which carries at
// most n of the turns left (they are taken from this one until it comes
// back), and settle, to call with the trace the other side answered with,
// if it did (ok). What that trace has left comes back; the rest counts as
// spent, against the quota too. Without an answer all it carried counts
// as spent for the tree (a host that cannot say never gets more than it
// was handed), but nothing known ran, so the quota is not charged.
func (t Trace) Handoff(n int) (sent Trace, settle func(back Trace, ok bool)) {
	if t.tree != nil {
		t.tree.mu.Lock()
		n = max(min(n, t.tree.left), 0)
		t.tree.left -= n
		t.tree.mu.Unlock()
	} else {
		n = 0
	}
	sent = t.copyTree(n)
	sent.tree.quota = nil
	return sent, func(back Trace, ok bool) {
		if t.tree == nil {
			return
		}
		ok = ok && back.ID == t.ID && back.tree != nil && back.tree != t.tree
		left, asked := 0, map[string]int(nil)
		if ok {
			left = max(min(back.Budget(), n), 0)
			back.tree.mu.Lock()
			asked = maps.Clone(back.tree.asked)
			back.tree.mu.Unlock()
		}
		t.tree.mu.Lock()
		t.tree.left += left
		for id, v := range asked {
			had, known := t.tree.asked[id]
			if v <= had || (!known && len(t.tree.asked) >= TreeTurns) {
				continue // a tree asks at most TreeTurns agents: the rest is a host's invention
			}
			if t.tree.asked == nil {
				t.tree.asked = map[string]int{}
			}
			t.tree.asked[id] = min(v, MaxVisits)
		}
		q := t.tree.quota
		t.tree.mu.Unlock()
		if q != nil && ok && n > left {
			q.Charge(n - left)
		}
	}
}

// copyTree is t with a ledger of its own: left turns, the same counts of
// who was asked, the same quota.
func (t Trace) copyTree(left int) Trace {
	c := Trace{ID: t.ID, Agents: t.Agents, tree: &ledger{left: left}}
	if t.tree != nil {
		t.tree.mu.Lock()
		c.tree.asked = maps.Clone(t.tree.asked)
		c.tree.quota = t.tree.quota
		t.tree.mu.Unlock()
	}
	return c
}

// traceWire is a Trace as it travels (MCP _meta both ways, A2A message
// metadata). Budget and Asked are optional: a node that predates them
// sends neither, and its traces get TreeTurns.
type traceWire struct {
	ID     string         `json:"id"`
	Agents []string       `json:"agents,omitempty"`
	Budget *int           `json:"budget,omitempty"`
	Asked  map[string]int `json:"asked,omitempty"`
}

// MarshalJSON writes the trace with what is left of its budget here.
func (t Trace) MarshalJSON() ([]byte, error) {
	w := traceWire{ID: t.ID, Agents: t.Agents}
	left := t.Budget()
	w.Budget = &left
	if t.tree != nil {
		t.tree.mu.Lock()
		w.Asked = maps.Clone(t.tree.asked)
		t.tree.mu.Unlock()
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a trace from another node with a ledger of its own:
// its budget capped to [0, TreeTurns] (TreeTurns when it has none), its
// visit counts to MaxVisits. Valid says whether the rest keeps to the
// limits.
func (t *Trace) UnmarshalJSON(b []byte) error {
	var w traceWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	left := TreeTurns
	if w.Budget != nil {
		left = max(min(*w.Budget, TreeTurns), 0)
	}
	l := &ledger{left: left}
	if len(w.Asked) > 0 {
		l.asked = make(map[string]int, len(w.Asked))
		for id, v := range w.Asked {
			l.asked[id] = max(min(v, MaxVisits), 0)
		}
	}
	*t = Trace{ID: w.ID, Agents: w.Agents, tree: l}
	return nil
}

// validTree reports whether the visit counts that came with a trace keep
// to the limits: at most TreeTurns agents (each was asked at least once),
// by valid ids.
func (t Trace) validTree() bool {
	if t.tree == nil {
		return true
	}
	t.tree.mu.Lock()
	defer t.tree.mu.Unlock()
	if len(t.tree.asked) > TreeTurns {
		return false
	}
	for id := range t.tree.asked {
		if !ValidID(id) {
			return false
		}
	}
	return true
}
