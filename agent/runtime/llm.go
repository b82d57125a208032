package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/url"
	"slices"
	"strings"

	"github.com/agentsite/agentsite/agent"
)

// llmMessage is one message of an OpenAI-compatible chat completion.
type llmMessage struct {
	Role       string        `json:"role"`
	Content    string        `json:"content"`
	ToolCalls  []llmToolCall `json:"tool_calls,omitempty"`   // assistant: the tools it called
	ToolCallID string        `json:"tool_call_id,omitempty"` // tool: which call this answers
}

// llmToolCall is one function call a model asked for.
type llmToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// llmTool is a function the model may call.
type llmTool struct {
	Type     string      `json:"type"`
	Function llmFunction `json:"function"`
}

type llmFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// llmRequest is the body of POST {base}/chat/completions.
type llmRequest struct {
	Model      string       `json:"model"`
	Stream     bool         `json:"stream"`
	Messages   []llmMessage `json:"messages"`
	Tools      []llmTool    `json:"tools,omitempty"`
	ToolChoice string       `json:"tool_choice,omitempty"`
}

// llmRound is what one completion request produced: text, and the tools
// the model called (none: it has answered).
type llmRound struct {
	Text  string
	Calls []llmToolCall
}

// chatCompletionsURL joins the backend's base URL (https://host/v1) and
// the endpoint, accepting a base that already names it.
func chatCompletionsURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errBadBackendURL
	}
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, "/chat/completions") {
		p += "/chat/completions"
	}
	u.Path, u.RawPath, u.Fragment = p, "", ""
	return u.String(), nil
}

// llmMessages is the system prompt, the history (user → "user", agent →
// "assistant"; other roles skipped) and the new text.
func llmMessages(b agent.Backend, t agent.Turn) []llmMessage {
	ms := make([]llmMessage, 0, len(t.History)+2)
	if strings.TrimSpace(b.SystemPrompt) != "" {
		ms = append(ms, llmMessage{Role: "system", Content: b.SystemPrompt})
	}
	for _, m := range t.History {
		switch m.Role {
		case agent.RoleUser:
			ms = append(ms, llmMessage{Role: "user", Content: m.Text})
		case agent.RoleAgent:
			ms = append(ms, llmMessage{Role: "assistant", Content: m.Text})
		}
	}
	return append(ms, llmMessage{Role: "user", Content: t.Text})
}

// llmRawFactor bounds the raw stream relative to the reply: each content
// delta of a few characters travels in ~150 bytes of JSON and SSE framing.
const llmRawFactor = 128

// answerLLM runs the completion, and the tool calls it asks for (a
// delegate agent's, and those of its tool servers), feeding their results
// back until the model answers. The
// reply is all the text the model wrote, in every round.
func (r *Runtime) answerLLM(ctx context.Context, b agent.Backend, t agent.Turn, emit func(string) error) (string, error) {
	endpoint, err := chatCompletionsURL(b.URL)
	if err != nil {
		return "", err
	}
	req := llmRequest{Model: b.Model, Stream: true, Messages: r.llmHistory(ctx, endpoint, b, t)}
	var dl *delegation
	maxRounds := 0
	if b.Delegate && r.Delegator != nil {
		dl = &delegation{d: r.Delegator, turn: t}
		req.Tools = delegationTools
		maxRounds += agent.MaxDelegations
	}
	tb := r.openToolBox(ctx, b, t) // the agent's tool servers; nil: none
	if tb != nil {
		req.Tools = append(slices.Clip(req.Tools), tb.tools...)
		maxRounds += r.opts.ToolCalls
	}
	var reply strings.Builder
	// A turn that answers an approval goes on from where its call waited.
	calls, err := r.resumeApproval(ctx, t, &req, tb)
	if err != nil {
		return "", err
	}
	for rounds := 0; ; rounds++ {
		if len(calls) == 0 {
			round, err := r.scheduledRound(ctx, endpoint, b, t, req, emit)
			reply.WriteString(round.Text)
			if err != nil || len(round.Calls) == 0 || (dl == nil && tb == nil) {
				return reply.String(), err
			}
			if rounds > maxRounds {
				// Told to answer (tool_choice none), it still calls tools.
				return reply.String(), kindError(agent.ErrBadBackendReply, agent.BackendLLM, "the model kept calling tools after its budget was spent")
			}
			req.Messages = append(req.Messages, llmMessage{Role: "assistant", Content: round.Text, ToolCalls: round.Calls})
			calls = round.Calls
		}
		for i, c := range calls {
			result, err := runToolCall(ctx, dl, tb, c)
			if err != nil {
				return reply.String(), r.pauseForApproval(ctx, t, req.Messages, calls[i:], err)
			}
			req.Messages = append(req.Messages, llmMessage{Role: "tool", ToolCallID: c.ID, Content: result})
		}
		calls = nil
		if (dl == nil || !dl.budgetLeft() || dl.turn.Trace.Budget() <= 0) && (tb == nil || !tb.left()) {
			// The turn's or the tree's budget is spent: the model must
			// answer now.
			req.ToolChoice = "none"
		}
	}
}

// runToolCall answers one tool call: a tool of the agent's tool servers,
// or delegation's find_agents and ask_agent (their names cannot meet: a
// server's tools are namespaced "<server>__<tool>").
func runToolCall(ctx context.Context, dl *delegation, tb *toolBox, c llmToolCall) (string, error) {
	switch {
	case tb != nil && tb.has(c.Function.Name):
		return tb.run(ctx, c)
	case dl != nil:
		return dl.run(ctx, c)
	}
	return fmt.Sprintf(`{"error":"no tool named %q; use one of the tools offered"}`, c.Function.Name), nil
}

// llmRound sends one completion request and reads its answer.
func (r *Runtime) llmRound(ctx context.Context, endpoint string, b agent.Backend, in llmRequest, emit func(string) error) (llmRound, error) {
	resp, err := r.postJSON(ctx, agent.BackendLLM, endpoint, "text/event-stream, application/json", b.APIKey, in)
	if err != nil {
		return llmRound{}, err
	}
	defer resp.Body.Close()
	raw := newCapReader(resp.Body, int64(r.opts.MaxReplyBytes)*llmRawFactor, nil)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// A server that ignores "stream": one whole completion.
		return r.llmWhole(raw, b.APIKey, emit)
	}
	return readLLMStream(raw, r.opts.MaxReplyBytes, b.APIKey, emit)
}

// llmWhole reads a non-streamed completion and emits it as one chunk.
func (r *Runtime) llmWhole(body io.Reader, key string, emit func(string) error) (llmRound, error) {
	var c struct {
		Choices []struct {
			Message struct {
				Content   string        `json:"content"`
				ToolCalls []llmToolCall `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(body).Decode(&c); err != nil {
		return llmRound{}, fmt.Errorf("%w: completion is not JSON: %w", agent.ErrBadBackendReply, err)
	}
	if c.Error != nil {
		e := kindError(agent.ErrBackendUnavailable, agent.BackendLLM, "the model reported an error")
		e.Upstream = sanitize(c.Error.Message, key)
		return llmRound{}, e
	}
	if len(c.Choices) == 0 {
		return llmRound{}, kindError(agent.ErrBadBackendReply, agent.BackendLLM, "the completion has no choices")
	}
	m := c.Choices[0].Message
	if len(m.Content) > r.opts.MaxReplyBytes {
		return llmRound{}, r.tooLarge(agent.BackendLLM)
	}
	return llmRound{Text: m.Content, Calls: m.ToolCalls}, emit(m.Content)
}
