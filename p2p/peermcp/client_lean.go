package peermcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// The lean call: to a host that speaks MCP 2026-07-28 (found when the
// pooled client first met it), send_message goes as one POST built and
// read here, the JSON-RPC messages of the answer decoded once each, instead
// of through mcp-go's client (its request metadata, tool look-up and SSE
// reader decoded each message several times: a sixth of the calling
// node's CPU in a remote turn; BENCHMARKS.md, "Chat turns across nodes
// cost what local ones do"). The bytes are those mcp-go's client sends, so
// any host that speaks the version answers them; hosts that speak only
// older versions are called through mcp-go's client.

// maxAnswerMessage bounds one message of a host's answer (a reply, a
// step): far above what a host sends (agent replies are at most 64 KiB by
// default), a bound on what a broken one can make this node hold.
const maxAnswerMessage = 8 << 20

// leanRequest is a send_message tools/call.
type leanRequest struct {
	JSONRPC string     `json:"jsonrpc"`
	ID      uint64     `json:"id"`
	Method  string     `json:"method"`
	Params  leanParams `json:"params"`
}

type leanParams struct {
	Meta      leanMeta `json:"_meta"`
	Arguments turnArgs `json:"arguments"`
	Name      string   `json:"name"`
}

// leanMeta is a call's _meta (its fields in the order a map of them
// encodes).
type leanMeta struct {
	Trace         any      `json:"agentsite/trace,omitempty"`
	Capabilities  struct{} `json:"io.modelcontextprotocol/clientCapabilities"`
	Version       string   `json:"io.modelcontextprotocol/protocolVersion"`
	ProgressToken any      `json:"progressToken"`
}

// leanMessage is one JSON-RPC message of the answer, decoded in one pass:
// a notification (Method, Params: a progress notification's whole, the
// token of any other) or the response (Result or Error).
type leanMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Message       string   `json:"message"`
		Chunks        []string `json:"chunks"` // notifications/agentsite/chunks
		Progress      float64  `json:"progress"`
		ProgressToken any      `json:"progressToken"`
	} `json:"params"`
	Result *leanResult `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// leanCall sends req to the host and returns its result, passing the
// notifications on to cn's sinks as they stream. A failure to reach the
// host or to read its answer is a *transport.Error, as mcp-go's client
// reports one.
func (cn *conn) leanCall(ctx context.Context, id uint64, req mcp.CallToolRequest, args turnArgs) (*mcp.CallToolResult, error) {
	body, err := leanBody(id, req, args)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, cn.url, bytes.NewReader(body))
	if err != nil {
		return nil, transport.NewError(err)
	}
	hd := hr.Header
	hd.Set("Content-Type", "application/json")
	hd.Set("Accept", "application/json, text/event-stream")
	hd.Set(mcp.HeaderProtocolVersion, fastVersion)
	hd.Set(mcp.HeaderMethod, string(mcp.MethodToolsCall))
	hd.Set(mcp.HeaderName, ToolName)
	resp, err := cn.http.Do(hr)
	if err != nil {
		return nil, transport.NewError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, transport.NewError(fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b)))
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerMessage))
		if err != nil {
			return nil, transport.NewError(err)
		}
		return cn.leanMessage(b)
	case "text/event-stream":
		return cn.leanEvents(resp.Body)
	}
	return nil, transport.NewError(fmt.Errorf("unexpected content type %q", mt))
}

// leanBody is the JSON-RPC request of a send_message call.
func leanBody(id uint64, req mcp.CallToolRequest, args turnArgs) ([]byte, error) {
	// Send sets the progress token and, for a delegated turn, the trace:
	// nothing else goes in a call's _meta.
	meta := leanMeta{Version: fastVersion, ProgressToken: req.Params.Meta.ProgressToken,
		Trace: req.Params.Meta.AdditionalFields[agent.TraceMetaKey]}
	return json.Marshal(leanRequest{JSONRPC: "2.0", ID: id, Method: string(mcp.MethodToolsCall),
		Params: leanParams{Meta: meta, Arguments: args, Name: ToolName}})
}

// leanEvents reads an SSE answer: each event's data is a message, the
// notifications passed on, until the response.
func (cn *conn) leanEvents(r io.Reader) (*mcp.CallToolResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxAnswerMessage)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data.Len() == 0 {
				continue
			}
			res, err := cn.leanMessage(data.Bytes())
			data.Reset()
			if res != nil || err != nil {
				return res, err
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
	}
	if data.Len() > 0 {
		if res, err := cn.leanMessage(data.Bytes()); res != nil || err != nil {
			return res, err
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return nil, transport.NewError(fmt.Errorf("the answer ended without a result: %w", err))
}

// leanMessage handles one message of an answer to a pooled call.
func (cn *conn) leanMessage(b []byte) (*mcp.CallToolResult, error) {
	return answerMessage(b, cn.sink)
}

// answerMessage handles one JSON-RPC message of a host's answer: a
// notification goes to its turn's sink (found by its progress token; nil,
// nil), the response is returned.
func answerMessage(b []byte, find func(token string) *progressSink) (*mcp.CallToolResult, error) {
	ev, err := decodeAnswer(b)
	if err != nil {
		return nil, err
	}
	if ev.response {
		return ev.res, ev.err
	}
	ev.apply(find)
	return nil, nil
}

// maxChunksAtOnce bounds the chunks of one notifications/agentsite/chunks
// (a host sends what an agent streamed in a millisecond).
const maxChunksAtOnce = 4096

// answerEvent is one decoded message of a host's answer: a notification
// of the call with progress token token, or the response to id (its
// result, or its error).
type answerEvent struct {
	token string
	// A progress notification's chunk (or chunks: the lines protocol's
	// notifications/agentsite/chunks; n is the last one's count), or
	// another notification.
	progress bool
	n        float64
	chunks   []string
	other    mcp.JSONRPCNotification

	response bool
	id       json.RawMessage
	res      *mcp.CallToolResult
	err      error
}

// decodeAnswer decodes one message of a host's answer. Only a message
// that is not JSON-RPC at all is an error; an error response is an event.
func decodeAnswer(b []byte) (answerEvent, error) {
	var m leanMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return answerEvent{}, transport.NewError(fmt.Errorf("undecodable message: %w", err))
	}
	if m.Method != "" {
		token, _ := m.Params.ProgressToken.(string)
		switch m.Method {
		case string(mcp.MethodNotificationProgress):
			return answerEvent{token: token, progress: true, n: m.Params.Progress, chunks: []string{m.Params.Message}}, nil
		case methodChunks:
			if len(m.Params.Chunks) > maxChunksAtOnce {
				return answerEvent{}, nil // not from a host of ours
			}
			return answerEvent{token: token, progress: true, n: m.Params.Progress, chunks: m.Params.Chunks}, nil
		}
		// Another notification (a step, the model queue): its params as
		// they are, for deliver.
		var whole struct {
			Params map[string]any `json:"params"`
		}
		ev := answerEvent{token: token}
		ev.other.Method = m.Method
		if json.Unmarshal(b, &whole) == nil {
			ev.other.Params.AdditionalFields = whole.Params
		}
		return ev, nil
	}
	ev := answerEvent{response: true, id: m.ID}
	switch {
	case m.Error != nil:
		ev.err = fmt.Errorf("JSON-RPC error %d: %s", m.Error.Code, m.Error.Message)
	case m.Result == nil:
		ev.err = transport.NewError(errors.New("a response without a result"))
	default:
		ev.res = m.Result.toolResult()
	}
	return ev, nil
}

// apply hands a notification to the turn find finds by its token.
func (ev answerEvent) apply(find func(token string) *progressSink) {
	switch {
	case ev.response || ev.token == "":
	case ev.progress:
		if s := find(ev.token); s != nil {
			first := ev.n - float64(len(ev.chunks)-1)
			for i, c := range ev.chunks {
				s.chunk(first+float64(i), c)
			}
		}
	default:
		deliver(ev.other, find)
	}
}

// leanResult is what this node reads of a send_message result: the text
// of its content, whether it is an error and the error's structured
// content, and its _meta (the trace, whether the history was read).
type leanResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool                       `json:"isError"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

// toolResult is the mcp.CallToolResult mcp-go's client would have made of
// r, as far as this node reads one (the text content; _meta's values stay
// JSON).
func (r *leanResult) toolResult() *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: r.IsError}
	for _, c := range r.Content {
		if c.Type == "text" {
			res.Content = append(res.Content, mcp.TextContent{Type: c.Type, Text: c.Text})
		}
	}
	if len(r.StructuredContent) > 0 {
		res.StructuredContent = r.StructuredContent
	}
	if len(r.Meta) > 0 {
		res.Meta = &mcp.Meta{AdditionalFields: make(map[string]any, len(r.Meta))}
		for k, v := range r.Meta {
			res.Meta.AdditionalFields[k] = v
		}
	}
	return res
}
