package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentsite/agentsite/agent"
)

// llmMessage is one message of an OpenAI-compatible chat completion.
type llmMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// llmRequest is the body of POST {base}/chat/completions.
type llmRequest struct {
	Model    string       `json:"model"`
	Stream   bool         `json:"stream"`
	Messages []llmMessage `json:"messages"`
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

func (r *Runtime) answerLLM(ctx context.Context, b agent.Backend, t agent.Turn, emit func(string) error) (string, error) {
	endpoint, err := chatCompletionsURL(b.URL)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(llmRequest{Model: b.Model, Stream: true, Messages: llmMessages(b, t)})
	if err != nil {
		return "", fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", errBadBackendURL
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	req.Header.Set("User-Agent", r.opts.UserAgent)
	if b.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+b.APIKey)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", statusError(agent.BackendLLM, resp, b.APIKey)
	}
	raw := newCapReader(resp.Body, int64(r.opts.MaxReplyBytes)*llmRawFactor, nil)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// A server that ignores "stream": one whole completion.
		return r.llmWhole(raw, b.APIKey, emit)
	}
	return readLLMStream(raw, r.opts.MaxReplyBytes, b.APIKey, emit)
}

// llmWhole reads a non-streamed completion and emits it as one chunk.
func (r *Runtime) llmWhole(body io.Reader, key string, emit func(string) error) (string, error) {
	var c struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(body).Decode(&c); err != nil {
		return "", fmt.Errorf("%w: completion is not JSON: %w", agent.ErrBadBackendReply, err)
	}
	if c.Error != nil {
		e := kindError(agent.ErrBackendUnavailable, agent.BackendLLM, "the model reported an error")
		e.Upstream = sanitize(c.Error.Message, key)
		return "", e
	}
	if len(c.Choices) == 0 {
		return "", kindError(agent.ErrBadBackendReply, agent.BackendLLM, "the completion has no choices")
	}
	text := c.Choices[0].Message.Content
	if len(text) > r.opts.MaxReplyBytes {
		return "", r.tooLarge(agent.BackendLLM)
	}
	return text, emit(text)
}
