package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/agent/runtime/fakenotes"
)

// demoPlannerSpec is node-a's planner: an agent that calls agents, on the
// demo's scripted model served at modelURL.
func demoPlannerSpec(modelURL, notesURL string) demoAgentSpec {
	return demoAgentSpec{
		Name: "planner", DisplayName: "Planner (demo model)",
		Description: "Hosted by demo node A. An agent that calls other agents, backed by a scripted demo model, not a real LLM: " +
			"for any question it searches the planet for a calculator on another node, asks it the arithmetic in your question " +
			"(6*7 if there is none), asks node C's haiku agent for a poem about the result, and answers with both. " +
			"Each step shows in the chat as it happens; the demo pauses a moment before each (agentsite demo --step-pause) so you can watch them arrive. " +
			"Say \"note <text>\" and it saves the note in the demo's notebook, an MCP tool server: reading the notes runs at once, " +
			"saving one waits until you approve the call.",
		Tags:    []string{"demo", "planner", "delegation"},
		Example: "what is 12*(3+4)?",
		Skill:   "Works a question out with agents on other nodes (scripted demo model).",
		Backend: agent.Backend{Kind: agent.BackendLLM, URL: modelURL, Model: demoPlannerModel, Delegate: true,
			Tools: []agent.ToolServer{{URL: notesURL}}},
	}
}

// demoNotesPath is where the demo's notebook MCP server (fakenotes) is
// served, beside the planner's model.
const demoNotesPath = "/notes/mcp"

// startPlanner serves the planner's scripted model in this process (on
// 127.0.0.1, a free port) and registers the planner on node-a, pointing
// at it. stop closes the model's server.
func (d *demo) startPlanner(ctx context.Context, token string) (stop func(), err error) {
	a, b, c := d.nodes[0], d.nodes[1], d.nodes[2]
	script := demoPlanner{HaikuID: c.agentID, HaikuWhere: c.name, Hosts: map[string]string{}, Pause: d.cfg.StepPause}
	for _, n := range d.nodes[1:] {
		script.Hosts[demoHostName(n.peerID)] = n.name
	}
	// node-b's calculator, so the demo shows the same three nodes each run;
	// without it the planner asks any other node's.
	if listings, err := d.listAgents(ctx, b); err == nil {
		for _, l := range listings {
			if l.Local && l.Name == "calculator" {
				script.PreferCalc = l.ID
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serve the planner's demo model: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(demoNotesPath, fakenotes.New().Handler())
	mux.Handle("/", pausing(&fakellm.Server{Model: demoPlannerModel, Script: script.Reply}, d.cfg.StepPause))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.warn("the planner's demo model stopped: %v", err)
		}
	}()
	stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-served
	}
	modelURL := "http://" + ln.Addr().String() + "/v1"
	spec := demoPlannerSpec(modelURL, "http://"+ln.Addr().String()+demoNotesPath)
	verb, id, err := d.ensureAgent(ctx, token, a, spec)
	if err != nil {
		stop()
		return nil, fmt.Errorf("%s: register %s: %w", a.name, spec.Name, err)
	}
	d.plannerID = id
	d.progress("%s: %s %q, an agent that calls agents, on the scripted demo model at %s", a.name, verb, spec.Name, modelURL)
	return stop, nil
}

// demoStepPause is the demo planner's default pause before each step:
// without it the three nodes answer within milliseconds and the steps
// land in the chat all at once.
const demoStepPause = 700 * time.Millisecond

// pausing is h after a pause of d on each request (the scripted model
// "thinking" before each step), cut short when the request ends. d 0 is
// h itself: tests and benchmarks run the script at full speed.
func pausing(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		h.ServeHTTP(w, r)
	})
}

// demoHostName is how find_agents names a node for people (agent/chat's
// hostName): the last six characters of its peer ID.
func demoHostName(peerID string) string {
	if len(peerID) > 6 {
		peerID = peerID[len(peerID)-6:]
	}
	return "node " + peerID
}
