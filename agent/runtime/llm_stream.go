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
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// readLLMStream reads server-sent events until "data: [DONE]", emitting
// choices[0].delta.content as it comes. Comments, keep-alives, other fields
// and empty lines are skipped. A stream that breaks off fails after the
// text so far has been emitted, and that text is returned with the error.
func readLLMStream(body io.Reader, maxReply int, key string, emit func(string) error) (string, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	var out strings.Builder
	finished := false
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // "", ": keep-alive", "event:", "id:", "retry:"
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			return out.String(), nil
		}
		if len(data) == 0 {
			continue
		}
		var c llmChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return out.String(), fmt.Errorf("%w: stream event is not JSON: %w", agent.ErrBadBackendReply, err)
		}
		if c.Error != nil {
			e := kindError(agent.ErrBackendUnavailable, agent.BackendLLM, "the model reported an error mid-stream")
			e.Upstream = sanitize(c.Error.Message, key)
			return out.String(), e
		}
		if len(c.Choices) == 0 {
			continue // e.g. a final usage chunk
		}
		ch := c.Choices[0]
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			finished = true
		}
		if s := ch.Delta.Content; s != "" {
			if out.Len()+len(s) > maxReply {
				return out.String(), fmt.Errorf("%w: more than %d bytes", agent.ErrReplyTooLarge, maxReply)
			}
			out.WriteString(s)
			if err := emit(s); err != nil {
				return out.String(), err
			}
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return out.String(), fmt.Errorf("%w: a stream line exceeds %d bytes", agent.ErrReplyTooLarge, maxSSELine)
	case errors.Is(err, agent.ErrReplyTooLarge):
		return out.String(), err
	case err != nil:
		e := kindError(agent.ErrBackendUnavailable, agent.BackendLLM, "the stream broke off")
		e.Err = err
		return out.String(), e
	case finished:
		return out.String(), nil // some servers end without [DONE]
	}
	return out.String(), kindError(agent.ErrBadBackendReply, agent.BackendLLM, "the stream ended before [DONE]")
}
