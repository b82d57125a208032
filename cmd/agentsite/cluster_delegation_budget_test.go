package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// The fan-out planet's scenarios, named by the user's message and passed
// on in every delegated message ("<mode>|chain:<names>").
const (
	fanChain  = "chain"  // the storm a delegation budget must stop: 8 asks a turn, among the four
	fanLeaves = "leaves" // the four ask each other once, then leaves
)

// fanPlanet is a delegation storm on two whole nodes: four delegating agents
// fan1..fan4 alternating between A and B (every hop of the chain crosses
// nodes), and eight leaf llm agents, four on each node. Every agent has a
// model of its own name on one fake server, so each turn shows as the
// model requests of its agent.
type fanPlanet struct {
	a, b  *clusterNode
	model *fakellm.Server
	ids   idBook
	host  map[string]*clusterNode // agent name → its node
}

var fanAgents = []string{"fan1", "fan2", "fan3", "fan4"}

func leafNames() []string {
	var out []string
	for i := 1; i <= 8; i++ {
		out = append(out, fmt.Sprintf("leaf%d", i))
	}
	return out
}

// script is the fan-out model of every agent: a delegating agent's first
// reply asks several agents at once, its second answers; a leaf answers.
func (p *fanPlanet) script(req fakellm.Request) fakellm.Reply {
	self := req.Model
	if strings.HasPrefix(self, "leaf") {
		return fakellm.Reply{Text: self + " says hi"}
	}
	if n := len(req.ToolResults()); n > 0 {
		return fakellm.Reply{Text: fmt.Sprintf("%s heard %d", self, n)}
	}
	mode, chainText, _ := strings.Cut(req.LastUser(), "|chain:")
	var chain []string
	if chainText != "" {
		chain = strings.Split(chainText, ",")
	}
	var others []string // the delegating agents not yet in this chain
	for _, a := range fanAgents {
		if a != self && !slices.Contains(chain, a) {
			others = append(others, a)
		}
	}
	var whom []string
	switch mode {
	case fanChain:
		// 8 asks, spread over the others (the 1+8+64+512 turns);
		// at the end of the chain, over everyone (all refused).
		pool := others
		if len(pool) == 0 {
			pool = slices.DeleteFunc(slices.Clone(fanAgents), func(a string) bool { return a == self })
		}
		for i := range agent.MaxDelegations {
			whom = append(whom, pool[i%len(pool)])
		}
	case fanLeaves:
		whom = append(whom, others...)
		for _, l := range leafNames() {
			if len(whom) == agent.MaxDelegations {
				break
			}
			whom = append(whom, l)
		}
	}
	text := mode + "|chain:" + strings.Join(append(slices.Clone(chain), self), ",")
	var calls []fakellm.ToolCall
	for i, w := range whom {
		args := map[string]string{"agent_id": p.ids.get(w), "text": text}
		calls = append(calls, fakellm.Call(fmt.Sprintf("ask-%d", i), runtime.ToolAskAgent, args))
	}
	return fakellm.Reply{Calls: calls}
}

// startFanPlanet starts A and B, registers the agents and waits until each
// node lists the other's agents online.
func startFanPlanet(tb testing.TB) *fanPlanet {
	tb.Helper()
	flags := []string{"--allow-private-endpoints", "--chat-rate-limit", "100000"}
	p := &fanPlanet{host: map[string]*clusterNode{}}
	p.a = startClusterNode(tb, nodeOpts{extra: flags})
	p.b = startClusterNode(tb, nodeOpts{bootstrap: []string{p.a.addr()}, extra: flags})
	p.model = &fakellm.Server{Model: "fan", Script: p.script}
	url := serveModel(tb, p.model)
	var wantOnA, wantOnB []string
	register := func(name string, delegate bool, n *clusterNode) {
		a := n.registerBackend(name, map[string]any{"kind": "llm", "url": url, "model": name, "delegate": delegate}, "fan")
		p.ids.set(name, a.ID)
		p.host[name] = n
		if n == p.a {
			wantOnB = append(wantOnB, a.ID)
		} else {
			wantOnA = append(wantOnA, a.ID)
		}
	}
	for i, name := range fanAgents {
		register(name, true, []*clusterNode{p.a, p.b}[i%2])
	}
	for i, name := range leafNames() {
		register(name, false, []*clusterNode{p.a, p.b}[i%2])
	}
	waitfor.Until(tb, 30*time.Second, "A and B to list each other's agents online", func() bool {
		onA, onB := p.a.agentIDs("online"), p.b.agentIDs("online")
		for _, id := range wantOnA {
			if _, ok := onA[id]; !ok {
				return false
			}
		}
		for _, id := range wantOnB {
			if _, ok := onB[id]; !ok {
				return false
			}
		}
		return true
	})
	return p
}

// turnsSince counts the turns each agent ran (its model's first request
// of a turn: one without tool results) among the requests after the
// first skip, and the model calls.
func (p *fanPlanet) turnsSince(skip int) (turns map[string]int, calls int) {
	reqs := p.model.Requests()[skip:]
	turns = map[string]int{}
	for _, r := range reqs {
		if len(r.ToolResults()) == 0 {
			turns[r.Model]++
		}
	}
	return turns, len(reqs)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// A delegation storm: a message to a chain of delegating agents on two
// nodes whose models ask several agents per turn. The whole tree stays within
// agent.TreeTurns delegated turns, no agent is asked more than
// agent.MaxVisits times, and the budget holds across the node hop: a node
// handed N turns spends at most N, and what it did not spend comes back.
func TestDelegationTreeBudgetAcrossTwoNodes(t *testing.T) {
	p := startFanPlanet(t)
	t.Run("a 4-agent chain fanning out 8 asks a turn", func(t *testing.T) {
		skip := len(p.model.Requests())
		out, err := sendMessage(t.Context(), p.a.m.HTTPURL(), p.ids.get("fan1"), fanChain)
		if err != nil {
			t.Fatal(err)
		}
		turns, calls := p.turnsSince(skip)
		delegated := sum(turns) - 1 // the person's own turn is not delegated
		t.Logf("one message: %d model calls, %d delegated turns %v", calls, delegated, turns)
		if delegated > agent.TreeTurns {
			t.Errorf("%d delegated turns, want at most %d (the tree budget)", delegated, agent.TreeTurns)
		}
		if max := 2 * (1 + agent.TreeTurns); calls > max {
			t.Errorf("%d model calls, want at most %d", calls, max)
		}
		for name, n := range turns {
			if name != "fan1" && n > agent.MaxVisits {
				t.Errorf("%s was asked %d times in one trace, want at most %d", name, n, agent.MaxVisits)
			}
		}
		if !strings.Contains(out.Reply, "fan1 heard 8") {
			t.Errorf("the first agent did not answer with its 8 tool results: %q", out.Reply)
		}
	})

	t.Run("leaves on both nodes: the budget is spent exactly, across the hop", func(t *testing.T) {
		skip := len(p.model.Requests())
		out, err := sendMessage(t.Context(), p.a.m.HTTPURL(), p.ids.get("fan1"), fanLeaves)
		if err != nil {
			t.Fatal(err)
		}
		turns, calls := p.turnsSince(skip)
		delegated := sum(turns) - 1
		onA, onB := 0, 0
		for name, n := range turns {
			if p.host[name] == p.a {
				onA += n
			} else {
				onB += n
			}
			if name != "fan1" && n > agent.MaxVisits {
				t.Errorf("%s was asked %d times in one trace, want at most %d", name, n, agent.MaxVisits)
			}
		}
		t.Logf("one message: %d model calls, %d delegated turns (%d on A, %d on B) %v", calls, delegated, onA, onB, turns)
		// The tree wants far more than the budget, so a budget split and
		// settled across the hop is spent to the last turn: more would be
		// a copied budget, fewer one lost on the way back from B.
		if delegated != agent.TreeTurns {
			t.Errorf("%d delegated turns, want exactly the tree budget %d", delegated, agent.TreeTurns)
		}
		if onB < 2 || onA < 2 {
			t.Errorf("turns on A %d, on B %d: the tree did not cross nodes both ways", onA, onB)
		}
		if !strings.Contains(out.Reply, "fan1 heard 8") {
			t.Errorf("the first agent did not answer with its 8 tool results: %q", out.Reply)
		}
		last := lastRequest(p.model, fanLeaves)
		if codes := toolCodes(p.model, fanLeaves); !slices.Contains(codes, string(agent.CodeDelegationBudget)) {
			t.Errorf("fan1's model read codes %q (last request %d messages), want a delegation_budget refusal once the tree was spent", codes, len(last.Messages))
		}
	})

	// A node handed N turns by a caller spends at most N, whatever its
	// agents ask, and says what is left; handed none, its agent answers
	// but every ask it makes is refused as a tool result.
	t.Run("a host spends no more than it was handed", func(t *testing.T) {
		for _, handed := range []int{3, 0} {
			skip := len(p.model.Requests())
			trace, _ := agent.NewTrace().Handoff(handed)
			reply, err := p.a.m.Peers.Send(t.Context(), p.b.peerID(),
				agent.Turn{AgentID: p.ids.get("fan2"), Text: fanLeaves, Trace: trace}, nil)
			if err != nil {
				t.Fatalf("handed %d: %v", handed, err)
			}
			turns, _ := p.turnsSince(skip)
			if spent := sum(turns) - 1; spent != handed {
				t.Errorf("handed %d turns, B's tree ran %d %v", handed, spent, turns)
			}
			if left := trace.Budget(); left != 0 {
				t.Errorf("handed %d, %d came back; the tree wanted more than it had", handed, left)
			}
			if !strings.Contains(reply, "fan2 heard 8") {
				t.Errorf("handed %d: fan2 did not answer: %q", handed, reply)
			}
			if handed == 0 {
				var fan2 fakellm.Request
				for _, r := range p.model.Requests()[skip:] {
					if r.Model == "fan2" {
						fan2 = r
					}
				}
				for _, r := range fan2.ToolResults() {
					if c := toolCode(r); c != string(agent.CodeDelegationBudget) {
						t.Errorf("handed nothing, fan2's ask got %s, want delegation_budget", r)
					}
				}
			}
		}
	})
}
