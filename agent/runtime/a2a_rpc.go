package runtime

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentsite/agentsite/agent"
)

// errStreamBroke marks a server-sent stream that broke off (the
// connection failed mid-stream): the turn resubscribes to the task.
var errStreamBroke = errors.New("the stream broke off")

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
		return &BackendError{Kind: agent.ErrBackendUnavailable, Backend: agent.BackendA2A, Public: "the stream broke off", Err: fmt.Errorf("%w: %w", errStreamBroke, err)}
	}
	return dispatch() // a last event without its blank line
}
