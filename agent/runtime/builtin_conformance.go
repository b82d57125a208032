package runtime

import (
	"context"
	"errors"
	"strings"

	"github.com/agentsite/agentsite/agent"
)

// The builtin conformance agent (agent.BuiltinConformance) is what the
// A2A conformance kit tests the node against (make a2a-tck,
// --conformance-agent). The kit says what it expects of each message by
// the prefix of the message's id, as the kit's own system under test does
// (its scenarios/*.feature): complete a task, make an artifact of each
// part kind, answer with a message, wait for input, fail, stream text and
// artifact chunks. It speaks only through agent.Turn's Yield and
// agent.NeedsInput, as any agent may.

// conformanceStep is what the agent does for a message id prefix.
type conformanceStep func(ctx context.Context, t agent.Turn, emit func(string) error) (string, error)

// conformanceSteps by message id prefix; the longest matching prefix
// wins ("tck-artifact-file-url" over "tck-artifact-file").
var conformanceSteps = map[string]conformanceStep{
	"tck-complete-task": reply("Hello from TCK"),
	"tck-artifact-text": artifact(agent.Part{Text: "Generated text content"}),
	"tck-artifact-file": artifact(agent.Part{File: &agent.File{Name: "output.txt", MediaType: "text/plain",
		Bytes: []byte("Generated file content")}}),
	"tck-artifact-file-url": artifact(agent.Part{File: &agent.File{Name: "output.txt", MediaType: "text/plain",
		URL: "https://example.com/output.txt"}}),
	"tck-artifact-data":    artifact(agent.Part{Data: map[string]any{"key": "value", "count": 42}}),
	"tck-message-response": messageReply("Direct message response"),
	"tck-input-required": func(context.Context, agent.Turn, func(string) error) (string, error) {
		return "", agent.NeedsInput("More input is needed: send it on the same task.")
	},
	"tck-reject-task": func(context.Context, agent.Turn, func(string) error) (string, error) {
		return "", errors.New("rejected")
	},
	"tck-stream-001":              streamed("Stream hello from TCK"),
	"tck-stream-002":              reply(""),
	"tck-stream-003":              streamed("Stream task lifecycle"),
	"tck-stream-ordering-001":     streamed("Ordered output"),
	"tck-stream-artifact-text":    artifact(agent.Part{Text: "Streamed text content"}),
	"tck-stream-artifact-file":    artifact(agent.Part{File: &agent.File{Name: "output.txt", MediaType: "text/plain", Bytes: []byte("Streamed file content")}}),
	"tck-stream-artifact-chunked": chunked("chunk-1 ", "chunk-2"),
}

// answerConformance does what the message's id asks; a message without a
// known prefix completes with the default reply.
func answerConformance(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	best := ""
	for p := range conformanceSteps {
		if strings.HasPrefix(t.MessageID, p) && len(p) > len(best) {
			best = p
		}
	}
	step := reply("Hello from TCK")
	if best != "" {
		step = conformanceSteps[best]
	}
	return step(ctx, t, emit)
}

// reply completes the task with text.
func reply(text string) conformanceStep {
	return func(_ context.Context, _ agent.Turn, emit func(string) error) (string, error) {
		if text != "" {
			if err := emit(text); err != nil {
				return "", err
			}
		}
		return text, nil
	}
}

// streamed is reply, a word at a time.
func streamed(text string) conformanceStep {
	return func(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
		return answerEcho(ctx, agent.Turn{Text: text}, emit)
	}
}

// yield hands o to the surface, when it takes more than text.
func yield(t agent.Turn, o agent.Output) {
	if t.Yield != nil {
		t.Yield(o)
	}
}

// artifact completes the task with one artifact of part and no text.
func artifact(part agent.Part) conformanceStep {
	return func(_ context.Context, t agent.Turn, _ func(string) error) (string, error) {
		yield(t, agent.Output{Artifact: &agent.Artifact{ID: "tck-artifact", Name: "output", Parts: []agent.Part{part}}})
		return "", nil
	}
}

// chunked makes one text artifact of chunks, each appended to the last.
func chunked(chunks ...string) conformanceStep {
	return func(_ context.Context, t agent.Turn, _ func(string) error) (string, error) {
		for i, c := range chunks {
			yield(t, agent.Output{Artifact: &agent.Artifact{ID: "tck-chunked", Name: "output",
				Parts: []agent.Part{{Text: c}}, Append: i > 0, LastChunk: i == len(chunks)-1}})
		}
		return "", nil
	}
}

// messageReply answers with a message that stands alone.
func messageReply(text string) conformanceStep {
	return func(_ context.Context, t agent.Turn, _ func(string) error) (string, error) {
		yield(t, agent.Output{Message: true})
		return text, nil
	}
}
