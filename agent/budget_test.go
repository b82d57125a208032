package agent_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

// agentID is a valid agent id made of one letter.
func agentID(c byte) string { return strings.Repeat(string(c), agent.IDLen) }

// fakeQuota counts what a trace draws from the sender's chat budget.
type fakeQuota struct {
	left    int // turns Allow may still take
	allowed int
	charged int
}

func (q *fakeQuota) Allow() bool {
	if q.left <= 0 {
		return false
	}
	q.left--
	q.allowed++
	return true
}

func (q *fakeQuota) Charge(n int) { q.charged += n }

// code is the error code of err ("" for none).
func code(err error) agent.Code {
	if e := agent.AsError(err); e != nil {
		return e.Code
	}
	return ""
}

// The tree's budget is shared by every branch that runs on this node:
// siblings and grandchildren spend from one count, which ends at
// TreeTurns, and no agent is asked more than MaxVisits times.
func TestTraceBudgetIsSharedByTheTree(t *testing.T) {
	root := agent.NewTrace()
	if root.Budget() != agent.TreeTurns {
		t.Fatalf("a new trace has %d turns, want %d", root.Budget(), agent.TreeTurns)
	}
	a, b := agentID('a'), agentID('b')
	child, err := root.Pass(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if root.Budget() != agent.TreeTurns-1 || child.Budget() != agent.TreeTurns-1 {
		t.Fatalf("after one ask: root %d, child %d, want both %d", root.Budget(), child.Budget(), agent.TreeTurns-1)
	}
	// A grandchild spends from the same count.
	if _, err := child.Pass(b, agentID('c')); err != nil {
		t.Fatal(err)
	}
	if root.Budget() != agent.TreeTurns-2 {
		t.Fatalf("a grandchild's ask left root %d, want %d", root.Budget(), agent.TreeTurns-2)
	}
	// b a second time is allowed, a third is refused (and costs nothing).
	if _, err := root.Pass(a, b); err != nil {
		t.Fatalf("second ask of b: %v", err)
	}
	if _, err := root.Pass(a, b); !errors.Is(err, agent.ErrDelegationLoop) {
		t.Fatalf("third ask of b: %v, want delegation_loop", err)
	}
	if root.Budget() != agent.TreeTurns-3 {
		t.Fatalf("a refused ask was spent: %d left, want %d", root.Budget(), agent.TreeTurns-3)
	}
	// Spend the rest on distinct agents, each once.
	asks := 0
	for c := byte('d'); ; c++ {
		if _, err := root.Pass(a, agentID(c)); err != nil {
			if code(err) != agent.CodeDelegationBudget {
				t.Fatalf("ask %d: %v, want delegation_budget", asks, err)
			}
			break
		}
		asks++
	}
	if asks != agent.TreeTurns-3 || root.Budget() != 0 {
		t.Errorf("%d more asks ran, %d left; want %d and 0", asks, root.Budget(), agent.TreeTurns-3)
	}
	// A trace not made by NewTrace or TraceFrom has no budget, not an
	// unlimited one.
	if _, err := (agent.Trace{ID: "t"}).Pass(a, b); code(err) != agent.CodeDelegationBudget {
		t.Errorf("a literal trace delegated: %v", err)
	}
}

// Handoff splits the budget for another node: the sent trace carries
// what is left (taken from this one meanwhile), what the host did not
// spend comes back, and only what it spent is charged to the quota. A
// host that does not answer with a trace spent all it was handed.
func TestTraceHandoffSettles(t *testing.T) {
	q := &fakeQuota{left: 100}
	root := agent.NewTrace().WithQuota(q)
	a, b := agentID('a'), agentID('b')
	child, err := root.Pass(a, b) // the turn sent to the host: 1, charged here
	if err != nil || q.allowed != 1 {
		t.Fatalf("pass: %v, quota allowed %d", err, q.allowed)
	}
	sent, settle := child.Handoff(agent.TreeTurns)
	if sent.Budget() != agent.TreeTurns-1 || root.Budget() != 0 {
		t.Fatalf("sent %d, left here %d; want %d and 0", sent.Budget(), root.Budget(), agent.TreeTurns-1)
	}

	// The host reads it, spends 4 of it (asking c twice), answers with it.
	raw, err := json.Marshal(map[string]any{agent.TraceMetaKey: sent})
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	_ = json.Unmarshal(raw, &md)
	there, ok := agent.TraceFrom(md)
	if !ok || there.Budget() != agent.TreeTurns-1 || there.ID != root.ID {
		t.Fatalf("the host read %+v (ok %v) budget %d", there, ok, there.Budget())
	}
	for i, callee := range []string{agentID('c'), agentID('c'), agentID('d'), agentID('e')} {
		if _, err := there.Pass(b, callee); err != nil {
			t.Fatalf("host's ask %d: %v", i, err)
		}
	}
	back := roundTrip(t, there)
	settle(back, true)
	if want := agent.TreeTurns - 1 - 4; root.Budget() != want {
		t.Errorf("after the host answered, %d left, want %d", root.Budget(), want)
	}
	if q.charged != 4 {
		t.Errorf("charged %d turns to the quota for the host's part, want 4", q.charged)
	}
	// The host's visits came back: c was asked twice over there.
	if _, err := root.Pass(a, agentID('c')); !errors.Is(err, agent.ErrDelegationLoop) {
		t.Errorf("a third ask of c after the host asked it twice: %v, want delegation_loop", err)
	}

	// A host that says nothing spent all it was handed, as far as the
	// tree knows; the sender is charged for none of it (none is known to
	// have run).
	before, charged := root.Budget(), q.charged
	sent, settle = root.Handoff(3)
	if sent.Budget() != 3 || root.Budget() != before-3 {
		t.Fatalf("handed %d, %d left, want 3 and %d", sent.Budget(), root.Budget(), before-3)
	}
	settle(agent.Trace{}, false)
	if root.Budget() != before-3 || q.charged != charged {
		t.Errorf("no answer: %d left, charged %d; want %d and %d", root.Budget(), q.charged, before-3, charged)
	}
	// A host cannot give back more than it was handed.
	sent, settle = root.Handoff(2)
	lying := roundTrip(t, agent.NewTrace()) // 16 turns, another id
	settle(lying, true)
	if root.Budget() != before-5 {
		t.Errorf("a host answering with another trace's budget: %d left, want %d", root.Budget(), before-5)
	}
	_ = sent
}

// The sender's chat budget refuses delegated turns once it is spent.
func TestTraceQuotaRefuses(t *testing.T) {
	q := &fakeQuota{left: 1}
	root := agent.NewTrace().WithQuota(q)
	if _, err := root.Pass(agentID('a'), agentID('b')); err != nil {
		t.Fatal(err)
	}
	_, err := root.Pass(agentID('a'), agentID('c'))
	if code(err) != agent.CodeDelegationBudget {
		t.Fatalf("with the quota spent: %v, want delegation_budget", err)
	}
	if root.Budget() != agent.TreeTurns-1 {
		t.Errorf("a refused ask was spent: %d left", root.Budget())
	}
}

// What the wire says of the budget: TreeTurns from a node that predates
// it, never more than TreeTurns, never less than 0; 0 refuses every ask.
func TestTraceBudgetOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		json string
		want int
	}{
		{`{"id":"t1"}`, agent.TreeTurns},
		{`{"id":"t1","agents":[]}`, agent.TreeTurns},
		{`{"id":"t1","budget":5}`, 5},
		{`{"id":"t1","budget":1000}`, agent.TreeTurns},
		{`{"id":"t1","budget":-3}`, 0},
		{`{"id":"t1","budget":0}`, 0},
	} {
		var md map[string]any
		if err := json.Unmarshal([]byte(`{"`+agent.TraceMetaKey+`":`+tc.json+`}`), &md); err != nil {
			t.Fatal(err)
		}
		tr, ok := agent.TraceFrom(md)
		if !ok || tr.Budget() != tc.want {
			t.Errorf("%s: budget %d (ok %v), want %d", tc.json, tr.Budget(), ok, tc.want)
		}
		if _, err := tr.Pass(agentID('a'), agentID('b')); (tc.want == 0) != (code(err) == agent.CodeDelegationBudget) {
			t.Errorf("%s: pass %v", tc.json, err)
		}
	}
	b, _ := json.Marshal(agent.NewTrace())
	if !strings.Contains(string(b), `"budget":16`) {
		t.Errorf("a new trace goes out as %s, want budget 16", b)
	}
	for _, bad := range []string{
		`{"id":"t1","asked":{"not-an-id":1}}`,
		`{"id":"t1","asked":` + manyAsked(agent.TreeTurns+1) + `}`,
	} {
		var md map[string]any
		_ = json.Unmarshal([]byte(`{"`+agent.TraceMetaKey+`":`+bad+`}`), &md)
		if _, ok := agent.TraceFrom(md); ok {
			t.Errorf("%.60s… was accepted", bad)
		}
	}
}

func manyAsked(n int) string {
	m := map[string]int{}
	for i := range n {
		m[agentID(byte('a'+i))] = 1
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// roundTrip is t as another node reads it back.
func roundTrip(t *testing.T, tr agent.Trace) agent.Trace {
	t.Helper()
	raw, err := json.Marshal(map[string]any{agent.TraceMetaKey: tr})
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	_ = json.Unmarshal(raw, &md)
	back, ok := agent.TraceFrom(md)
	if !ok {
		t.Fatalf("%s does not read back", raw)
	}
	return back
}
