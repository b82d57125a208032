package runtime

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentsite/agentsite/agent"
)

// maxSSELine bounds one line of a completion stream.
const maxSSELine = 1 << 20

// llmChunk is one "data:" event of an OpenAI-compatible stream
// (object "chat.completion.chunk"), or an error some servers send instead.
type llmChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
			// ToolCalls are pieces of tool calls: the first of each
			// (by index) names it, the rest append to its arguments.
			ToolCalls []struct {
				Index int `json:"index"`
				llmToolCall
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// maxToolCalls bounds the tool calls one streamed completion may assemble
// (the turn's budget is smaller; the rest are answered with a refusal).
const maxToolCalls = 32

// readLLMStream reads server-sent events until "data: [DONE]", emitting
// choices[0].delta.content as it comes and assembling the tool calls the
// deltas carry. Comments, keep-alives, other fields and empty lines are
// skipped. A stream that breaks off fails after the text so far has been
// emitted, and that text is returned with the error.
func readLLMStream(body io.Reader, maxReply int, key string, emit func(string) error) (llmRound, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	var out strings.Builder
	var calls []llmToolCall
	round := func() llmRound { return llmRound{Text: out.String(), Calls: calls} }
	finished := false
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // "", ": keep-alive", "event:", "id:", "retry:"
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			return round(), nil
		}
		if len(data) == 0 {
			continue
		}
		var c llmChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return round(), fmt.Errorf("%w: stream event is not JSON: %w", agent.ErrBadBackendReply, err)
		}
		if c.Error != nil {
			e := kindError(agent.ErrBackendUnavailable, agent.BackendLLM, "the model reported an error mid-stream")
			e.Upstream = sanitize(c.Error.Message, key)
			return round(), e
		}
		if len(c.Choices) == 0 {
			continue // e.g. a final usage chunk
		}
		ch := c.Choices[0]
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			finished = true
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index >= maxToolCalls {
				return round(), fmt.Errorf("%w: tool call index %d", agent.ErrBadBackendReply, tc.Index)
			}
			for len(calls) <= tc.Index {
				calls = append(calls, llmToolCall{Type: "function"})
			}
			c := &calls[tc.Index]
			if tc.ID != "" {
				c.ID = tc.ID
			}
			c.Function.Name += tc.Function.Name
			if c.Function.Arguments += tc.Function.Arguments; len(c.Function.Arguments) > maxReply {
				return round(), fmt.Errorf("%w: tool call arguments over %d bytes", agent.ErrReplyTooLarge, maxReply)
			}
		}
		if s := ch.Delta.Content; s != "" {
			if out.Len()+len(s) > maxReply {
				return round(), fmt.Errorf("%w: more than %d bytes", agent.ErrReplyTooLarge, maxReply)
			}
			out.WriteString(s)
			if err := emit(s); err != nil {
				return round(), err
			}
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return round(), fmt.Errorf("%w: a stream line exceeds %d bytes", agent.ErrReplyTooLarge, maxSSELine)
	case errors.Is(err, agent.ErrReplyTooLarge):
		return round(), err
	case err != nil:
		e := kindError(agent.ErrBackendUnavailable, agent.BackendLLM, "the stream broke off")
		e.Err = err
		return round(), e
	case finished:
		return round(), nil // some servers end without [DONE]
	}
	return round(), kindError(agent.ErrBadBackendReply, agent.BackendLLM, "the stream ended before [DONE]")
}
