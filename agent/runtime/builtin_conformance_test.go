package runtime

import (
	"errors"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

// The conformance agent answers only on a runtime that allows it
// (--conformance-agent); elsewhere it is no agent at all.
func TestConformanceAgentOnlyWhenAllowed(t *testing.T) {
	b := agent.Backend{Kind: agent.BackendBuiltin, Builtin: agent.BuiltinConformance}
	if err := b.Validate(); err != nil {
		t.Fatalf("the conformance builtin does not validate: %v", err)
	}
	turn := agent.Turn{AgentID: "a1", Text: "hi", MessageID: "tck-complete-task-1"}
	if _, _, err := answer(t, b, RuntimeOptions{}, turn); !errors.Is(err, agent.ErrUnknownAgent) {
		t.Errorf("without Conformance: %v, want ErrUnknownAgent", err)
	}
	if reply, _, err := answer(t, b, RuntimeOptions{Conformance: true}, turn); err != nil || reply != "Hello from TCK" {
		t.Errorf("with Conformance: %q, %v", reply, err)
	}
}

// Its turns say what they yield through the runtime as any agent's do: a
// pause for input passes through Answer unchanged (not as a failure), and
// artifacts and a stand-alone reply reach Yield.
func TestConformanceAgentOutputs(t *testing.T) {
	b := agent.Backend{Kind: agent.BackendBuiltin, Builtin: agent.BuiltinConformance}
	opts := RuntimeOptions{Conformance: true}
	rt := newTestRuntime(t, b, opts)
	_, err := rt.Answer(t.Context(), agent.Turn{AgentID: "a1", Text: "hi", MessageID: "tck-input-required-1"}, nil)
	if prompt, ok := agent.InputPrompt(err); !ok || prompt == "" {
		t.Errorf("tck-input-required: %v, want a prompt for input", err)
	}
	var got []agent.Output
	yield := func(o agent.Output) { got = append(got, o) }
	reply, _, err := answer(t, b, opts, agent.Turn{AgentID: "a1", Text: "hi", MessageID: "tck-artifact-file-url-9", Yield: yield})
	if err != nil || reply != "" || len(got) != 1 || got[0].Artifact == nil ||
		got[0].Artifact.Parts[0].File == nil || got[0].Artifact.Parts[0].File.URL != "https://example.com/output.txt" {
		t.Errorf("tck-artifact-file-url: %q %v %+v, want one file url artifact", reply, err, got)
	}
	got = nil
	reply, _, err = answer(t, b, opts, agent.Turn{AgentID: "a1", Text: "hi", MessageID: "tck-message-response-1", Yield: yield})
	if err != nil || reply != "Direct message response" || len(got) != 1 || !got[0].Message {
		t.Errorf("tck-message-response: %q %v %+v", reply, err, got)
	}
}
