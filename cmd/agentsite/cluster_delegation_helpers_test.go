package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// What the test asks A's planner; its script plays one scenario for each.
const (
	askHaiku  = "what is 6*7, as a haiku?" // the demo's plan: B's calculator, then C's haiku
	askSelf   = "ask yourself"             // a loop: the planner asks itself
	askBounce = "ask the relay on node B"  // A→B→A: B's relay asks the planner back
	askNine   = "nine sums at once"        // 9 tool calls in one model reply, to B's echo0..echo3
	askPoet   = "ask the poet on node C"   // C's poet hangs until C dies
	askTwo    = "two steps"                // the benchmark: calculator, then haiku
	relayAsks = "hello from the relay"     // what B's relay sends the planner
)

// delegationPlanet is three whole nodes on loopback: A hosts the planner
// (a delegate llm agent on a fake model); B the builtin calculator (demo
// agents) and the relay (a delegate llm agent that asks the planner back);
// C a builtin haiku agent and the poet (an llm agent whose model answers
// only once released, or never once C is gone).
type delegationPlanet struct {
	a, b, c                  *clusterNode
	planner, relay, poet     apiAgent
	calc, haiku              apiAgent
	plannerModel, relayModel *fakellm.Server
	// modelNanos is the time A's model server spent answering, all turns
	// together: the benchmark subtracts it.
	modelNanos atomic.Int64
	// poetAsked hears of each request reaching the poet's model.
	poetAsked chan struct{}
	ids       idBook
}

// idBook holds the agent ids the fake models' scripts read: they are
// known only once the agents are registered, after the models started.
type idBook struct {
	mu sync.Mutex
	m  map[string]string
}

func (b *idBook) set(name, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]string{}
	}
	b.m[name] = id
}

func (b *idBook) get(name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[name]
}

// ask is one ask_agent call of a script: whom (by name in the idBook) and what.
type ask struct{ who, text string }

// askInOrder is a script making one ask_agent call per model reply, in
// order, then answering with every tool result.
func askInOrder(ids *idBook, asks ...ask) fakellm.Script {
	return func(req fakellm.Request) fakellm.Reply {
		results := req.ToolResults()
		if i := len(results); i < len(asks) {
			args := map[string]string{"agent_id": ids.get(asks[i].who), "text": asks[i].text}
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call(fmt.Sprintf("ask-%d", i), runtime.ToolAskAgent, args)}}
		}
		return fakellm.Reply{Text: "what I heard: " + strings.Join(results, " | ")}
	}
}

// plannerScript plays the scenario the user's message names.
func (p *delegationPlanet) plannerScript(req fakellm.Request) fakellm.Reply {
	switch req.LastUser() {
	case askSelf:
		return askInOrder(&p.ids, ask{"planner", "are you there?"})(req)
	case askBounce:
		return askInOrder(&p.ids, ask{"relay", "ask the planner back"})(req)
	case askPoet:
		return askInOrder(&p.ids, ask{"poet", "a slow poem"})(req)
	case askTwo:
		return askInOrder(&p.ids, ask{"calculator", "6*7"}, ask{"haiku", "42"})(req)
	case askNine:
		if n := len(req.ToolResults()); n > 0 {
			return fakellm.Reply{Text: fmt.Sprintf("%d tool results", n)}
		}
		// Four agents, each asked twice (agent.MaxVisits), then a ninth call.
		var calls []fakellm.ToolCall
		for i := range 9 {
			args := map[string]string{"agent_id": p.ids.get(fmt.Sprintf("echo%d", i%4)), "text": fmt.Sprintf("%d+1", i)}
			calls = append(calls, fakellm.Call(fmt.Sprintf("sum-%d", i), runtime.ToolAskAgent, args))
		}
		return fakellm.Reply{Calls: calls}
	}
	return demoPlanner{HaikuID: p.ids.get("haiku"), HaikuWhere: "node C"}.Reply(req)
}

// startDelegationPlanet starts the three nodes (with flags extra too) and
// their agents, and waits until A knows every agent it will ask and B
// knows the planner.
func startDelegationPlanet(tb testing.TB, extra ...string) *delegationPlanet {
	tb.Helper()
	p := &delegationPlanet{poetAsked: make(chan struct{}, 16)}
	private := append([]string{"--allow-private-endpoints"}, extra...)
	p.a = startClusterNode(tb, nodeOpts{extra: private})
	p.b = startClusterNode(tb, nodeOpts{bootstrap: []string{p.a.addr()}, demo: true, extra: private})
	p.c = startClusterNode(tb, nodeOpts{bootstrap: []string{p.a.addr()}, extra: private})

	p.plannerModel = &fakellm.Server{Model: "planner-model", Script: p.plannerScript}
	plannerURL := serveModel(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		p.plannerModel.ServeHTTP(w, r)
		p.modelNanos.Add(int64(time.Since(t0)))
	}))
	p.relayModel = &fakellm.Server{Model: "relay-model", Script: askInOrder(&p.ids, ask{"planner", relayAsks})}
	relayURL := serveModel(tb, p.relayModel)
	// The poet's model holds every request until its caller gives up (C's
	// runtime, as C shuts down) or the test ends.
	released := make(chan struct{})
	poetModel := &fakellm.Server{Model: "poet-model", Script: func(fakellm.Request) fakellm.Reply { return fakellm.Reply{Text: "too late"} }}
	poetURL := serveModel(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			select {
			case p.poetAsked <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
				return
			case <-released:
			}
		}
		poetModel.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() { close(released) }) // runs before the servers close

	llm := func(url, model string, delegate bool) map[string]any {
		return map[string]any{"kind": "llm", "url": url, "model": model, "delegate": delegate}
	}
	p.planner = p.a.registerBackend("planner", llm(plannerURL, "planner-model", true), "planner")
	p.relay = p.b.registerBackend("relay", llm(relayURL, "relay-model", true), "relay")
	p.poet = p.c.registerBackend("poet", llm(poetURL, "poet-model", false), "poetry")
	p.haiku = p.c.registerBackend("haiku", map[string]any{"kind": "builtin", "builtin": "haiku"}, "poetry")
	waitfor.Until(tb, 20*time.Second, "B to host the calculator", func() bool {
		for _, a := range p.b.agentIDs("online") {
			if a.Local && a.Name == "calculator" {
				p.calc = a
				return true
			}
		}
		return false
	})
	for name, a := range map[string]apiAgent{"planner": p.planner, "relay": p.relay, "poet": p.poet, "haiku": p.haiku, "calculator": p.calc} {
		p.ids.set(name, a.ID)
	}
	waitfor.Until(tb, 30*time.Second, "A to list B's and C's agents online, and B the planner", func() bool {
		onA := p.a.agentIDs("online")
		for _, a := range []apiAgent{p.calc, p.relay, p.poet, p.haiku} {
			if _, ok := onA[a.ID]; !ok {
				return false
			}
		}
		_, ok := p.b.agentIDs("online")[p.planner.ID]
		return ok
	})
	return p
}

// serveModel serves a fake model on loopback and returns its base URL.
func serveModel(tb testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// askPlanner sends text to A's planner through A's message API.
func (p *delegationPlanet) askPlanner(ctx context.Context, text string) (apiwire.MessageOut, error) {
	return sendMessage(ctx, p.a.m.HTTPURL(), p.planner.ID, text)
}

// sendMessage sends text to agentID through a portal's message API
// (POST /api/v1/agents/{id}/messages, no account), within 90 s.
func sendMessage(ctx context.Context, portal, agentID, text string) (apiwire.MessageOut, error) {
	return postMessage(ctx, portal, agentID, apiwire.MessageIn{Text: text})
}

// postMessage posts in to agentID's message API at portal.
func postMessage(ctx context.Context, portal, agentID string, in apiwire.MessageIn) (apiwire.MessageOut, error) {
	var out apiwire.MessageOut
	body, _ := json.Marshal(in)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, portal+"/api/v1/agents/"+agentID+"/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("POST messages: %d %s", resp.StatusCode, raw)
	}
	return out, json.Unmarshal(raw, &out)
}
