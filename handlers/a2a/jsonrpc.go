package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/agentsite/agentsite/handlers/httpkit"
)

// MaxBodyBytes caps a JSON-RPC request: a message is at most 8 KiB of
// text, but clients may add parts and metadata around it.
const MaxBodyBytes = 256 << 10

// keepAliveEvery is how often an idle stream sends an SSE comment, so
// proxies do not cut a turn that is slow to start.
const keepAliveEvery = 15 * time.Second

// Request is a JSON-RPC 2.0 request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"` // a string, a number or null; echoed as sent
}

// Response is a JSON-RPC 2.0 response, and each event of a stream.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error. Codes are the A2A specification's; Data
// carries AgentSite's stable error code, so scripts need not read the
// message, which is written for people.
type RPCError struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
	// status is the HTTP status of the domain error it stands for (0:
	// a protocol error); the 1.0 and REST answers map it.
	status int
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// ErrorData is the data of an RPCError.
type ErrorData struct {
	Code   string            `json:"code"`
	Fields map[string]string `json:"fields,omitempty"`
}

// JSON-RPC and A2A error codes.
const (
	CodeParseError           = -32700
	CodeInvalidRequest       = -32600
	CodeMethodNotFound       = -32601
	CodeInvalidParams        = -32602
	CodeInternal             = -32603
	CodeServerError          = -32000 // AgentSite's own errors; data.code says which
	CodeTaskNotFound         = -32001
	CodeTaskNotCancelable    = -32002
	CodePushNotSupported     = -32003
	CodeUnsupportedOperation = -32004
	CodeContentTypeNotSupp   = -32005
	CodeNoExtendedCard       = -32007
	CodeVersionNotSupported  = -32009
	CodeUnauthenticated      = -31401 // A2A 1.0 only; 0.3 callers get -32000
)

// Errors of the protocol.
var (
	errParse          = &RPCError{Code: CodeParseError, Message: "The request body is not valid JSON."}
	errInvalidRequest = &RPCError{Code: CodeInvalidRequest, Message: `Not a JSON-RPC 2.0 request: send {"jsonrpc": "2.0", "method": "...", "params": {...}, "id": 1}.`}
	errTaskNotFound   = &RPCError{Code: CodeTaskNotFound, Message: "No such task here. Tasks are kept for a while only; " +
		"the conversation goes on: send a new message with the same contextId."}
	errTaskEnded     = &RPCError{Code: CodeTaskNotCancelable, Message: "The task has already ended."}
	errNoResubscribe = &RPCError{Code: CodeUnsupportedOperation, Message: "The task has ended: there is nothing to subscribe to; read it with GetTask (tasks/get)."}
	errOnlyText      = &RPCError{Code: CodeContentTypeNotSupp, status: http.StatusUnsupportedMediaType,
		Message: "Only text parts are understood; send the message as text."}
	errTaskFinishedInput = &RPCError{Code: CodeInvalidParams, Message: "Each message here is a task of its own, which takes no " +
		"further input: to continue the conversation, send a new message without taskId, with the same contextId."}
)

func invalidParams(message string) *RPCError {
	return &RPCError{Code: CodeInvalidParams, Message: message}
}

func methodNotFound(method string) *RPCError {
	return &RPCError{Code: CodeMethodNotFound, Message: fmt.Sprintf("Unknown method %q: this agent speaks A2A 1.0 "+
		"(SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, the "+
		"TaskPushNotificationConfig methods, GetExtendedAgentCard) and A2A 0.3 (message/send, message/stream, "+
		"tasks/get, tasks/cancel, tasks/resubscribe, tasks/pushNotificationConfig/*, agent/getAuthenticatedExtendedCard).", method)}
}

// v1Names are the 1.0 names of 0.3's JSON-RPC methods.
var v1Names = map[string]string{
	"message/send": mSendMessage, "message/stream": mSendStreamingMessage, "tasks/get": mGetTask,
	"tasks/cancel": mCancelTask, "tasks/resubscribe": mSubscribeToTask,
	"tasks/pushNotificationConfig/set": mCreatePush, "tasks/pushNotificationConfig/get": mGetPush,
	"tasks/pushNotificationConfig/list": mListPush, "tasks/pushNotificationConfig/delete": mDeletePush,
	"agent/getAuthenticatedExtendedCard": mGetExtendedCard,
}

// notInVersion1 answers a method A2A 1.0 does not have, asked under
// A2A-Version 1.0: method not found, with the versions served and, for a
// 0.3 method, its 1.0 name.
func notInVersion1(method string) *RPCError {
	msg := fmt.Sprintf("Method %q is not in A2A 1.0, the version this request asked for (A2A-Version: 1.0). "+
		"This agent serves A2A versions 1.0 and 0.3", method)
	if v1, ok := v1Names[method]; ok {
		msg += fmt.Sprintf(": %q is A2A 0.3's; in 1.0 call %s, or send it with A2A-Version: 0.3 (or no A2A-Version header).", method, v1)
	} else {
		msg += "; see the card's supportedInterfaces."
	}
	return &RPCError{Code: CodeMethodNotFound, Message: msg}
}

func versionNotSupported(v string) *RPCError {
	return &RPCError{Code: CodeVersionNotSupported, Message: fmt.Sprintf("A2A version %q is not served here: "+
		"this agent serves A2A versions 1.0 and 0.3: send A2A-Version: 1.0 (or 0.3, or no header for 0.3).", v)}
}

// rpcError is the JSON-RPC form of err: protocol errors as they are,
// anything else through httpkit.Classify (the one mapping of domain
// errors), whose safe message it carries.
func rpcError(err error) (*RPCError, *httpkit.Error) {
	var re *RPCError
	if errors.As(err, &re) {
		return re, nil
	}
	e := httpkit.Classify(err)
	code := CodeServerError
	switch e.Status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge:
		code = CodeInvalidParams
	case http.StatusInternalServerError:
		code = CodeInternal
	}
	return &RPCError{Code: code, Message: e.Message, Data: &ErrorData{Code: e.Code, Fields: e.Fields}, status: e.Status}, e
}

// readRequest reads a JSON-RPC request, answering and returning false when
// there is none: a body over MaxBodyBytes (413) or too slow (408) fails at
// the HTTP level, before any id is known; a malformed one is a JSON-RPC
// error (-32700 when it is not JSON, -32600 with the request's id when it
// is JSON but no request, a non-string method included).
func readRequest(w http.ResponseWriter, r *http.Request) (Request, bool) {
	var req Request
	c := &call{}
	if r.Header.Get(versionHeader) != "" && !strings.HasPrefix(strings.TrimSpace(r.Header.Get(versionHeader)), "0.") {
		c.d = dialect10
	}
	if r.ContentLength > MaxBodyBytes {
		writeHTTPError(w, httpkit.ErrTooLarge)
		return req, false
	}
	if !jsonContent(r) {
		c.fail(w, errNotJSON)
		return req, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	var raw struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
		ID      json.RawMessage `json:"id,omitempty"`
	}
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		var mbe *http.MaxBytesError
		var he *httpkit.Error // a body that arrived too slowly
		if errors.As(err, &mbe) || errors.As(err, &he) {
			writeHTTPError(w, httpkit.Classify(err))
			return req, false
		}
		c.fail(w, errParse)
		return req, false
	}
	// Read to the end: the node lifts the body read deadline there, and a
	// turn may run longer than that deadline.
	_, _ = io.Copy(io.Discard, r.Body)
	req.Params, req.ID = raw.Params, raw.ID
	if !validID(req.ID) {
		req.ID = nil
	}
	c.id = req.ID
	if isV1Method(jsonString(raw.Method)) {
		c.d = dialect10
	}
	req.JSONRPC, req.Method = jsonString(raw.JSONRPC), jsonString(raw.Method)
	if req.JSONRPC != "2.0" || req.Method == "" || !validID(raw.ID) {
		c.fail(w, errInvalidRequest)
		return req, false
	}
	return req, true
}

// jsonContent: the body is said to be JSON, or its type is not said.
func jsonContent(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

var errNotJSON = &RPCError{Code: CodeContentTypeNotSupp, status: http.StatusUnsupportedMediaType,
	Message: "The body must be JSON: send Content-Type: application/json."}

// jsonString is raw as a JSON string, "" when it is none.
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// validID: JSON-RPC ids are strings, numbers or null.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9', c == 'n':
		return true
	}
	return false
}

// writeHTTPError answers a failure of the HTTP exchange itself (too large,
// too slow, too many requests) with its status and a JSON-RPC error body,
// which the A2A clients read on any status.
func writeHTTPError(w http.ResponseWriter, e *httpkit.Error) {
	httpkit.SetRetryAfter(w, e)
	code := CodeInvalidRequest
	if e.Status == http.StatusTooManyRequests {
		code = CodeServerError
	}
	writeResponse(w, e.Status, Response{Error: &RPCError{Code: code, Message: e.Message, Data: &ErrorData{Code: e.Code}}})
}

func writeResponse(w http.ResponseWriter, status int, resp Response) {
	resp.JSONRPC = "2.0"
	httpkit.WriteJSON(w, status, resp)
}

// result is the response carrying v.
func result(id json.RawMessage, v any) Response {
	b, err := json.Marshal(v)
	if err != nil { // a2a types always encode; keep the client informed anyway
		return Response{ID: id, Error: &RPCError{Code: CodeInternal, Message: httpkit.ErrInternal.Message}}
	}
	return Response{ID: id, Result: b}
}

// sse writes a message/stream answer: Server-Sent Events, one JSON-RPC
// response per event, each flushed as it is written.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

func (s *sse) send(resp Response) error {
	resp.JSONRPC = "2.0"
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sse) sendJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sse) keepAlive() error {
	if _, err := fmt.Fprint(s.w, ": keep-alive\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}
