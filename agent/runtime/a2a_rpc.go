package runtime

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

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent"
)

// A2A 0.3 JSON-RPC methods the a2a backend calls.
const (
	a2aMethodSend   = "message/send"
	a2aMethodStream = "message/stream"
	a2aMethodGet    = "tasks/get"
)

// a2aStreamFactor bounds a whole event stream relative to the reply: each
// event repeats ids and envelopes around its text.
const a2aStreamFactor = 64

// rpcRequest is a JSON-RPC 2.0 request.
type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      string `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// rpcResponse is a JSON-RPC 2.0 response, or one event of a stream.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// rpcError is a JSON-RPC error: the agent refused the call before running
// it (A2A's -32001 task not found, -32602 invalid params, ...).
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error leaves the remote text out: it goes to BackendError.Upstream,
// sanitized.
func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d", e.Code) }

// JSON-RPC 2.0 error codes that say the agent failed rather than refused.
const (
	rpcInternalError = -32603 // the specification's internal error
	rpcServerError   = -32000 // the first of the implementation-defined server errors
)

// backendError classifies a JSON-RPC error: internal and server errors as
// the agent failing, the rest as a refusal.
func (e *rpcError) backendError() *BackendError {
	be := &BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendA2A, Public: "the agent refused the message",
		Upstream: sanitize(e.Message, ""), Err: e}
	if e.Code == rpcInternalError || e.Code == rpcServerError {
		be.Kind, be.Public = agent.ErrBackendUnavailable, "the agent failed"
	}
	return be
}

// a2aPost sends one JSON-RPC call with the guarded client and returns the
// response to read, or a classified error for a non-200 status.
func (r *Runtime) a2aPost(ctx context.Context, endpoint, method string, params any) (*http.Response, error) {
	accept := "application/json"
	if method == a2aMethodStream {
		accept = "text/event-stream, application/json"
	}
	return r.postJSON(ctx, agent.BackendA2A, endpoint, accept, "",
		rpcRequest{JSONRPC: "2.0", ID: a2a.NewMessageID(), Method: method, Params: params})
}

// readA2A hands each A2A event of resp to on and closes the body: the
// events of a server-sent stream, or the one result of a JSON answer (an
// agent may answer message/stream that way too).
func (r *Runtime) readA2A(resp *http.Response, on func(a2a.Event) error) error {
	defer resp.Body.Close()
	one := func(data []byte) error {
		var res rpcResponse
		if err := json.Unmarshal(data, &res); err != nil {
			return fmt.Errorf("%w: the answer is not JSON-RPC: %w", agent.ErrBadBackendReply, err)
		}
		if res.Error != nil {
			return res.Error.backendError()
		}
		ev, err := a2a.UnmarshalEventJSON(res.Result)
		if err != nil {
			return fmt.Errorf("%w: the result is not an A2A object: %w", agent.ErrBadBackendReply, err)
		}
		return on(ev)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return readSSEData(newCapReader(resp.Body, int64(r.opts.MaxReplyBytes)*a2aStreamFactor+maxSSELine, nil), one)
	}
	raw, err := io.ReadAll(newCapReader(resp.Body, int64(r.opts.MaxReplyBytes)*webhookRawFactor+256<<10, nil))
	if err != nil {
		return err
	}
	return one(raw)
}

// readSSEData hands the data of each server-sent event to on (its data
// lines joined by "\n", per the SSE standard); other fields and comments
// are skipped. data is only valid during the call.
func readSSEData(body io.Reader, on func(data []byte) error) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	var data []byte
	has := false
	dispatch := func() error {
		if !has {
			return nil
		}
		has = false
		return on(data)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if err := dispatch(); err != nil {
				return err
			}
			continue
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // "id:", "event:", "retry:", ": keep-alive"
		}
		v = bytes.TrimPrefix(v, []byte(" "))
		if has {
			data = append(data, '\n')
		} else {
			data = data[:0]
		}
		data = append(data, v...)
		has = true
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("%w: a stream line exceeds %d bytes", agent.ErrReplyTooLarge, maxSSELine)
	case errors.Is(err, agent.ErrReplyTooLarge):
		return err
	case err != nil:
		return &BackendError{Kind: agent.ErrBackendUnavailable, Backend: agent.BackendA2A, Public: "the stream broke off", Err: err}
	}
	return dispatch() // a last event without its blank line
}
