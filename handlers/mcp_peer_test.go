package handlers_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// Tests of mcp_peer.go, which moves to p2p/peermcp (with its own tests):
// delete this file with it.

func TestPeerMCPHandler(t *testing.T) {
	env := NewChat(t)
	echo := env.SeedEcho("echo-bot", "Echo")
	ts := httptest.NewServer(env.Server.PeerMCPHandler())
	t.Cleanup(ts.Close)
	cs, got := ConnectMCP(t, ts.URL, "")
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "send_message" {
		t.Fatalf("peer tools = %+v", tools.Tools)
	}
	history := []map[string]string{{"role": "user", "text": "earlier"}, {"role": "agent", "text": "earlier"}}
	res := CallTool(t, cs, "send_message", map[string]any{"agent_id": echo, "text": "one two three", "history": history}, "p1")
	if parts := got.Of("p1", 3); res.IsError || ResultText(res)[0] != "one two three" || strings.Join(parts, "") != "one two three" {
		t.Fatalf("peer send_message = %q, chunks %q", ResultText(res), parts)
	}
	// Stateless: nothing was stored on the host.
	if convs, _ := env.Store.ListConversations(t.Context(), "mcp:anonymous", 10); len(convs) != 0 {
		t.Errorf("the host stored %d conversations", len(convs))
	}
	key, _, _ := crypto.GenerateEd25519Key(nil)
	missing, _ := agent.DeriveID(key.GetPublic(), "nobody-here")
	for name, args := range map[string]map[string]any{
		"unknown agent": {"agent_id": missing, "text": "hi"},
		"bad role":      {"agent_id": echo, "text": "hi", "history": []map[string]string{{"role": "system", "text": "x"}}},
	} {
		res := CallTool(t, cs, "send_message", args, "")
		e := Structured[struct{ Error httpkit.ErrorJSON }](t, res)
		if !res.IsError || e.Error.Code == "" {
			t.Errorf("%s: %v %+v", name, res.IsError, e)
		}
	}
	// Not served to the public: no Origin check needed, but the body cap
	// (1 MiB) holds.
	big := bytes.Repeat([]byte("x"), 1<<20+1)
	resp, err := http.Post(ts.URL, "application/json", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized peer body: %d", resp.StatusCode)
	}
}

// TestPeerTurnRefusedAfterOwnerChange: a calling node with a stale cache
// names the owner its conversation is bound to; the host refuses the turn
// when its record has another owner.
func TestPeerTurnRefusedAfterOwnerChange(t *testing.T) {
	env := NewChat(t)
	echo := env.SeedEcho("echo-bot", "Echo") // the operator's: owner ""
	ts := httptest.NewServer(env.Server.PeerMCPHandler())
	t.Cleanup(ts.Close)
	cs, _ := ConnectMCP(t, ts.URL, "")
	history := []map[string]string{{"role": "user", "text": "my PIN is 4921"}, {"role": "agent", "text": "noted"}}

	res := CallTool(t, cs, "send_message", map[string]any{"agent_id": echo, "text": "PIN?", "history": history, "owner": "alice"}, "")
	if e := Structured[struct{ Error httpkit.ErrorJSON }](t, res); !res.IsError || e.Error.Code != "agent_changed_owner" {
		t.Errorf("turn bound to alice, agent now the operator's: isError %v, %+v; want agent_changed_owner", res.IsError, e)
	}
	for name, args := range map[string]map[string]any{
		"same owner":              {"agent_id": echo, "text": "hi", "history": history, "owner": ""},
		"a caller without owners": {"agent_id": echo, "text": "hi"},
	} {
		if res := CallTool(t, cs, "send_message", args, ""); res.IsError || ResultText(res)[0] != "hi" {
			t.Errorf("%s: %q", name, ResultText(res))
		}
	}
}
