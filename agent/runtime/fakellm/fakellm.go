// Package fakellm is a small OpenAI-compatible chat-completions server that
// answers from a script instead of a model: for tests of agents that call
// agents, and for the demo planet, where it is labelled as a demo model.
// It speaks the real wire protocol: POST {base}/chat/completions with
// "stream": true answered as server-sent events (content deltas, streamed
// tool_calls, finish_reason, [DONE]), or one JSON completion otherwise;
// GET {base}/models lists the model.
package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Message is one message of a request, as the server received it.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call, asked for by the script or echoed back by
// the client in the next request.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Call builds a ToolCall of function name with arguments args (JSON).
func Call(id, name string, args any) ToolCall {
	b, _ := json.Marshal(args)
	c := ToolCall{ID: id, Type: "function"}
	c.Function.Name, c.Function.Arguments = name, string(b)
	return c
}

// Request is a completion request.
type Request struct {
	Model      string            `json:"model"`
	Stream     bool              `json:"stream"`
	Messages   []Message         `json:"messages"`
	Tools      []json.RawMessage `json:"tools,omitempty"`
	ToolChoice string            `json:"tool_choice,omitempty"`
}

// LastUser is the text of the last user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// ToolResults are the results of the tool calls so far, in order.
func (r Request) ToolResults() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

// Reply is what the script answers: text, and tool calls (none: the model
// has answered).
type Reply struct {
	Text  string
	Calls []ToolCall
}

// Script decides each reply from the request.
type Script func(Request) Reply

// Server is the fake model. Requests records every request it answered.
type Server struct {
	Model  string
	Script Script
	// Chunk is how many bytes of text go in one streamed delta (default 8).
	Chunk int

	mu       sync.Mutex
	requests []Request
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ServeHTTP answers GET …/models and POST …/chat/completions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"fakellm"}]}`, s.Model)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		var req Request
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20)).Decode(&req); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":%q}}`, "bad request: "+err.Error())
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		reply := s.Script(req)
		if req.Stream {
			s.stream(w, reply)
			return
		}
		s.whole(w, reply)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) whole(w http.ResponseWriter, reply Reply) {
	finish := "stop"
	if len(reply.Calls) > 0 {
		finish = "tool_calls"
	}
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	if len(reply.Calls) > 0 {
		msg["tool_calls"] = reply.Calls
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "fake", "object": "chat.completion", "model": s.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
	})
}

func (s *Server) stream(w http.ResponseWriter, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	event := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "fake", "object": "chat.completion.chunk", "model": s.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	n := s.Chunk
	if n <= 0 {
		n = 8
	}
	for text := reply.Text; text != ""; {
		k := min(n, len(text))
		for k < len(text) && !utf8Start(text[k]) {
			k++
		}
		event(map[string]any{"content": text[:k]}, nil)
		text = text[k:]
	}
	for i, c := range reply.Calls {
		// The name first, then the arguments in two pieces, as real
		// servers stream them.
		half := len(c.Function.Arguments) / 2
		event(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Function.Name, "arguments": ""}}}}, nil)
		for _, part := range []string{c.Function.Arguments[:half], c.Function.Arguments[half:]} {
			event(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": part}}}}, nil)
		}
	}
	finish := "stop"
	if len(reply.Calls) > 0 {
		finish = "tool_calls"
	}
	event(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
