package registry_test

import (
	"errors"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
)

// TestValidateBackend: the Test backend button checks a backend as saving
// does, host rule included, and probes it trimmed as it would be stored.
func TestValidateBackend(t *testing.T) {
	hook := agent.Backend{Kind: " webhook ", URL: " http://127.0.0.1:9/hook "}
	_, err := registry.ValidateBackend(hook, runtime.Policy{})
	var ve *agent.ValidationError
	if !errors.As(err, &ve) || ve.Fields["backend.url"] == "" {
		t.Fatalf("private webhook without allowPrivate: %v, want a backend.url error", err)
	}
	b, err := registry.ValidateBackend(hook, runtime.Policy{Private: true})
	if err != nil {
		t.Fatalf("private webhook with allowPrivate: %v", err)
	}
	if b.Kind != agent.BackendWebhook || b.URL != "http://127.0.0.1:9/hook" {
		t.Errorf("backend not trimmed: %+v", b)
	}
	_, err = registry.ValidateBackend(agent.Backend{Kind: agent.BackendLLM, URL: "ftp://x"}, runtime.Policy{Private: true})
	if !errors.As(err, &ve) || ve.Fields["backend.url"] == "" || ve.Fields["backend.model"] == "" {
		t.Errorf("bad llm backend: %v, want url and model errors", err)
	}
}

// TestKeepKey: a blank llm key keeps the stored one; a typed one wins.
func TestKeepKey(t *testing.T) {
	old := agent.Backend{Kind: agent.BackendLLM, APIKey: "sk-old"}
	if got := registry.KeepKey(agent.Backend{Kind: agent.BackendLLM}, old).APIKey; got != "sk-old" {
		t.Errorf("blank key: %q, want the stored one", got)
	}
	if got := registry.KeepKey(agent.Backend{Kind: agent.BackendLLM, APIKey: "sk-new"}, old).APIKey; got != "sk-new" {
		t.Errorf("typed key: %q, want it kept", got)
	}
	if got := registry.KeepKey(agent.Backend{Kind: agent.BackendWebhook}, old).APIKey; got != "" {
		t.Errorf("webhook: %q, want no key", got)
	}
	// An a2a agent keeps its own key and its card's pinned signer, never
	// an llm agent's key, and not the signer of another card URL.
	card := "https://agents.example.com/.well-known/agent-card.json"
	a2aOld := agent.Backend{Kind: agent.BackendA2A, URL: card, APIKey: "sk-a2a", CardSigner: "12D3KooWsigner"}
	if got := registry.KeepKey(agent.Backend{Kind: agent.BackendA2A, URL: card}, a2aOld); got.APIKey != "sk-a2a" || got.CardSigner != "12D3KooWsigner" {
		t.Errorf("a2a: %+v, want the stored key and signer", got)
	}
	if got := registry.KeepKey(agent.Backend{Kind: agent.BackendA2A, URL: card}, old).APIKey; got != "" {
		t.Errorf("a2a after llm: %q, want no key", got)
	}
	if got := registry.KeepKey(agent.Backend{Kind: agent.BackendA2A, URL: card + "?moved"}, a2aOld).CardSigner; got != "" {
		t.Errorf("a2a on another card URL: signer %q, want none", got)
	}
}
