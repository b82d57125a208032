package chat_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

func TestTurnError(t *testing.T) {
	local := store.Listing{Local: true}
	remote := store.Listing{HostPeerID: "12D3KooWHost"}
	rejected := &runtime.BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendLLM, Status: 429,
		Upstream: "quota of key sk-secret: exceeded", Public: "HTTP 429 Too Many Requests"}
	long := &runtime.BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendMCP, Public: strings.Repeat("x", 300)}
	cases := []struct {
		name string
		err  error
		l    store.Listing
		code agent.Code
		msg  string // the whole message, if set
	}{
		{"canceled", fmt.Errorf("llm backend: %w", context.Canceled), local, agent.CodeCanceled, chat.ErrCanceled.Message},
		{"deadline", fmt.Errorf("llm backend: %w", context.DeadlineExceeded), local, agent.CodeAgentTimeout, agent.ErrBackendTimeout.Message},
		{"deadline on a remote turn", context.DeadlineExceeded, remote, agent.CodeAgentTimeout, ""},
		{"local failure", errors.New("boom"), local, agent.CodeAgentUnavailable, agent.ErrBackendUnavailable.Message},
		{"remote failure", errors.New("stream reset"), remote, agent.CodeHostUnreachable, agent.ErrHostUnreachable.Message},
		{"internal domain error, remote", agent.NewError(agent.KindInternal, agent.CodeInternal, "boom"), remote, agent.CodeHostUnreachable, ""},
		{"rejected", rejected, local, agent.CodeAgentRejected, "The agent's backend refused the request: HTTP 429 Too Many Requests"},
		{"rejected, from a host", fmt.Errorf("peer: %w: HTTP 401 Unauthorized", agent.ErrBackendRejected), remote, agent.CodeAgentRejected,
			"The agent's backend refused the request: HTTP 401 Unauthorized"},
		{"rejected, long detail", long, local, agent.CodeAgentRejected, "The agent's backend refused the request: " + strings.Repeat("x", 200) + "…"},
		{"rejected, a detail with a colon", &runtime.BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendA2A, Public: "task failed: quota exceeded"},
			local, agent.CodeAgentRejected, "The agent's backend refused the request: task failed: quota exceeded"},
		{"unknown at the host", agent.ErrUnknownAgent, remote, agent.CodeUnknownAgent, "This agent is not hosted here any more."},
		{"model busy", &runtime.BackendError{Kind: agent.ErrModelBusy, Backend: agent.BackendLLM, Public: "busy: 3 waiting; try again shortly"}, local,
			agent.CodeModelBusy, "The agent's model is busy: 3 waiting; try again shortly."},
		{"model busy, from a host", fmt.Errorf("peer: %w", agent.ErrModelBusy), remote, agent.CodeModelBusy, agent.ErrModelBusy.Message},
		{"busy host", fmt.Errorf("send: %w", agent.ErrAgentBusy), remote, agent.CodeAgentBusy, agent.ErrAgentBusy.Message},
		{"owner changed at the host", agent.ErrOwnerChanged, remote, agent.CodeOwnerChanged, agent.ErrOwnerChanged.Message},
		{"a host's timeout code", agent.TurnError(agent.CodeAgentTimeout), remote, agent.CodeAgentTimeout, agent.ErrBackendTimeout.Message},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := chat.TurnError(tc.err, tc.l)
			if e.Code != tc.code || (tc.msg != "" && e.Message != tc.msg) {
				t.Errorf("TurnError = %s %q, want %s %q", e.Code, e.Message, tc.code, tc.msg)
			}
			if !errors.Is(e, tc.err) {
				t.Errorf("the cause %v is lost", tc.err)
			}
			if strings.Contains(e.Message, "sk-secret") || strings.Contains(e.Message, "boom") {
				t.Errorf("message %q shows internal detail", e.Message)
			}
		})
	}
}

func TestOwners(t *testing.T) {
	key, err := chat.NewAnonKey()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := chat.NewAnonKey()
	if key == other || len(key) > chat.MaxConversationIDLen || len(key) < 20 {
		t.Errorf("anonymous keys %q, %q: want distinct, 20–%d characters", key, other, chat.MaxConversationIDLen)
	}
	owners := map[chat.Owner]string{
		chat.UserOwner(42):       "user:42",
		chat.AnonOwner(key):      "anon:" + key,
		chat.MCPOwner("s-1"):     "mcp:s-1",
		chat.OperatorOwner:       "operator",
		chat.APIAnonymous:        "api:anonymous",
		chat.MCPAnonymous:        "mcp:anonymous",
		chat.UserOwner(4):        "user:4",
		chat.AnonOwner("user:4"): "anon:user:4", // a key cannot pass for a user
	}
	for o, want := range owners {
		if string(o) != want {
			t.Errorf("owner %q, want %q", o, want)
		}
	}
	if len(owners) != 8 {
		t.Errorf("owners collide: %d distinct of 8", len(owners))
	}
}
