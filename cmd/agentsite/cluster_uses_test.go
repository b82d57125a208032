package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
)

// TestUsesTravelInTheHeartbeat: B counts the week's conversations of the
// agent it hosts and says so in its signed heartbeat; A, a mirror, shows
// the count and sorts by it.
func TestUsesTravelInTheHeartbeat(t *testing.T) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"reply":"ok"}`))
	}))
	t.Cleanup(hook.Close)
	extra := []string{"--probe-interval", "1s", "--uses-interval", "1s", "--allow-private-endpoints"}
	b := startClusterNode(t, nodeOpts{heartbeat: time.Second, extra: extra})
	a := startClusterNode(t, nodeOpts{heartbeat: time.Second, bootstrap: []string{b.addr()}, extra: extra})
	used := b.registerBackend("used-hook", map[string]any{"kind": "webhook", "url": hook.URL + "/hook"})
	b.registerBackend("idle-hook", map[string]any{"kind": "webhook", "url": hook.URL + "/hook"})

	ctx := t.Context()
	for _, id := range []string{"conv-1", "conv-2"} {
		if _, err := b.m.Store.CreateConversation(ctx, store.Conversation{ID: id, AgentID: used.ID, OwnerKey: "user:1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.m.Store.AppendMessage(ctx, store.Message{ConversationID: id, Role: "user", Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	usesOnA := func() int {
		code, body := a.api(http.MethodGet, "/api/v1/agents/"+used.ID, nil)
		var got struct {
			Health struct {
				Uses7d int `json:"uses_7d"`
			} `json:"health"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
			return -1
		}
		return got.Health.Uses7d
	}
	waitfor.Until(t, 30*time.Second, "A to show B's agent with 2 conversations this week", func() bool { return usesOnA() == 2 })
	code, body := a.api(http.MethodGet, "/api/v1/agents?sort=used", nil)
	var page struct {
		Agents []apiAgent `json:"agents"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Agents) == 0 || page.Agents[0].ID != used.ID {
		t.Errorf("A's agents by use: %d %s, want %s first", code, body, used.ID)
	}
}
