package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/chatws"
)

// Transitional: helpers of the root tests that drive the API and the chat
// WebSocket across surfaces and have not moved to an external test
// package yet. External tests use handlertest's WeatherInput, Bearer,
// MustDial and Turn instead; this file goes when the last root test that
// needs it moves.

func weatherInput(name string) registry.Input {
	in := simpleInput(name, "Weather Bot", "weather", "forecast")
	in.Description = "Forecasts for any city.\nUses open data."
	in.Skills = []agent.Skill{{ID: "forecast", Name: "Forecast", Description: "Three-day forecast", Examples: []string{"Paris tomorrow?"}}}
	in.Version = "1.2.0"
	return in
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// mustDial opens the chat WebSocket with env's cookies (visit a chat page
// first).
func (e *testEnv) mustDial() *websocket.Conn {
	e.t.Helper()
	d := websocket.Dialer{Jar: e.client.Jar, HandshakeTimeout: 5 * time.Second}
	c, _, err := d.DialContext(e.t.Context(), "ws"+strings.TrimPrefix(e.ts.URL, "http")+"/api/v1/chat", http.Header{"Origin": {e.ts.URL}})
	if err != nil {
		e.t.Fatalf("dial chat: %v", err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// turn sends a message and returns the frame that ends its reply.
func turn(t *testing.T, c *websocket.Conn, in chatws.In) (chunks []string, last chatws.Out) {
	t.Helper()
	in.Type = chatws.TypeMessage
	if err := c.WriteJSON(in); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var f chatws.Out
		if err := c.ReadJSON(&f); err != nil {
			t.Fatalf("read frame: %v", err)
		}
		if f.Type != chatws.TypeChunk {
			return chunks, f
		}
		chunks = append(chunks, f.Text)
	}
}

// failingAnswerer streams chunk (if any), then fails with err.
type failingAnswerer struct {
	chunk string
	err   error
}

func (f failingAnswerer) Answer(_ context.Context, _ agent.Turn, emit func(string) error) (string, error) {
	if f.chunk != "" {
		if err := emit(f.chunk); err != nil {
			return "", err
		}
	}
	return f.chunk, f.err
}
