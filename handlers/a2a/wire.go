package a2a

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"
)

// A request is answered in the dialect it was asked in: A2A 0.3 over
// JSON-RPC (message/send, …), A2A 1.0 over JSON-RPC (SendMessage, …) or
// 1.0 over HTTP+JSON (REST). Tasks are kept as 0.3 values; the 1.0
// answers are converted on the way out (see v1Value). Only the 1.0 wire
// types of a2a-go v2 are used here: its a2acompat package (which has the
// same conversions) pulls in gRPC, which the binary does without.
type dialect int

const (
	dialect03 dialect = iota
	dialect10
	dialectREST
)

// Methods of A2A 1.0's JSON-RPC binding.
const (
	mSendMessage          = "SendMessage"
	mSendStreamingMessage = "SendStreamingMessage"
	mGetTask              = "GetTask"
	mListTasks            = "ListTasks"
	mCancelTask           = "CancelTask"
	mSubscribeToTask      = "SubscribeToTask"
	mCreatePush           = "CreateTaskPushNotificationConfig"
	mGetPush              = "GetTaskPushNotificationConfig"
	mListPush             = "ListTaskPushNotificationConfigs"
	mDeletePush           = "DeleteTaskPushNotificationConfig"
	mGetExtendedCard      = "GetExtendedAgentCard"
)

// versionHeader is A2A 1.0's A2A-Version request header.
const versionHeader = "A2A-Version"

// supportedVersion: 0.3 and 1.0 (Major.Minor, any patch); an absent header
// means 0.3, as the specification says.
func supportedVersion(v string) bool {
	v = strings.TrimSpace(v)
	for _, ok := range []string{"0.3", "1.0"} {
		if v == "" || v == ok || strings.HasPrefix(v, ok+".") {
			return true
		}
	}
	return false
}

// call is one request being answered: its dialect, JSON-RPC id, and
// whether the answer is a stream.
type call struct {
	d      dialect
	id     json.RawMessage
	stream bool
	// wrap: the result is a 1.0 SendMessageResponse ({"task": …} or
	// {"message": …}), not the value itself.
	wrap bool
}

// ok answers v (a 0.3 value, converted for 1.0 callers).
func (c *call) ok(w http.ResponseWriter, v any) {
	if c.stream {
		out := startSSE(w)
		_ = c.event(out, v)
		return
	}
	switch c.d {
	case dialect03:
		writeResponse(w, http.StatusOK, result(c.id, v))
	case dialect10:
		writeV1(w, http.StatusOK, v1Response{ID: c.id, Result: c.body(v)})
	default:
		writeREST(w, http.StatusOK, c.body(v))
	}
}

// body is v as a 1.0 result.
func (c *call) body(v any) any {
	v = v1Value(v)
	if ev, isEvent := v.(v1.Event); isEvent && c.wrap {
		return v1.StreamResponse{Event: ev}
	}
	return v
}

// fail answers e: over JSON-RPC, as the one event of a stream when a
// stream was asked for (clients of a stream read event-stream even for an
// error); over REST always with its HTTP status.
//
// A 1.0 stream that fails before it starts is a plain JSON-RPC error with
// the HTTP status REST would give: the official clients and the
// conformance kit read a JSON body as the error, and a2a-go's client,
// which reads any 200 as a stream, sees the status.
func (c *call) fail(w http.ResponseWriter, e *RPCError) {
	if c.stream && c.d == dialect10 {
		status, _ := restError(e)
		writeV1(w, status, v1Response{ID: c.id, Error: v1Error(e)})
		return
	}
	if c.stream && c.d == dialect03 {
		_ = startSSE(w).sendErr(c, e)
		return
	}
	switch c.d {
	case dialect03:
		writeResponse(w, http.StatusOK, Response{ID: c.id, Error: e})
	case dialect10:
		writeV1(w, http.StatusOK, v1Response{ID: c.id, Error: v1Error(e)})
	default:
		status, body := restError(e)
		writeREST(w, status, body)
	}
}

// relay writes each event to out as it comes, and a keep-alive when the
// stream has been quiet for keepAliveEvery, until events closes, a write
// fails (the client left) or ctx ends: the one loop of message/stream,
// SendStreamingMessage and the resubscribes.
func (c *call) relay(ctx context.Context, out *sse, events <-chan a2a.Event) {
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			if c.event(out, e) != nil {
				return
			}
			tick.Reset(keepAliveEvery)
		case <-tick.C:
			if out.keepAlive() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// event writes one event of a stream.
func (c *call) event(out *sse, v any) error {
	switch c.d {
	case dialect03:
		return out.send(result(c.id, v))
	case dialect10:
		return out.sendJSON(v1Response{JSONRPC: "2.0", ID: c.id, Result: v1.StreamResponse{Event: v1Value(v).(v1.Event)}})
	default:
		return out.sendJSON(v1.StreamResponse{Event: v1Value(v).(v1.Event)})
	}
}

func (s *sse) sendErr(c *call, e *RPCError) error {
	switch c.d {
	case dialect03:
		return s.send(Response{ID: c.id, Error: e})
	case dialect10:
		return s.sendJSON(v1Response{JSONRPC: "2.0", ID: c.id, Error: v1Error(e)})
	default:
		_, body := restError(e)
		return s.sendJSON(body)
	}
}

// v1Response is a JSON-RPC response of A2A 1.0: its errors carry
// google.rpc details.
type v1Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *v1RPCError     `json:"error,omitempty"`
}

type v1RPCError struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Data    []map[string]any `json:"data,omitempty"`
}

func writeV1(w http.ResponseWriter, status int, resp v1Response) {
	resp.JSONRPC = "2.0"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

func writeREST(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// sentinels maps the A2A error codes to a2a-go v2's errors, whose reason
// (the ErrorInfo of 1.0 errors) clients match on.
var sentinels = map[int]error{
	CodeParseError: v1.ErrParseError, CodeInvalidRequest: v1.ErrInvalidRequest, CodeMethodNotFound: v1.ErrMethodNotFound,
	CodeInvalidParams: v1.ErrInvalidParams, CodeInternal: v1.ErrInternalError, CodeServerError: v1.ErrServerError,
	CodeTaskNotFound: v1.ErrTaskNotFound, CodeTaskNotCancelable: v1.ErrTaskNotCancelable,
	CodePushNotSupported: v1.ErrPushNotificationNotSupported, CodeUnsupportedOperation: v1.ErrUnsupportedOperation,
	CodeContentTypeNotSupp: v1.ErrUnsupportedContentType, CodeNoExtendedCard: v1.ErrExtendedCardNotConfigured,
	CodeVersionNotSupported: v1.ErrVersionNotSupported, CodeUnauthenticated: v1.ErrUnauthenticated,
}

// errorInfo is the google.rpc.ErrorInfo of e: the A2A reason, and
// AgentSite's own code (data.code in 0.3) in its metadata.
func errorInfo(code int, e *RPCError) map[string]any {
	reason := "INTERNAL_ERROR"
	if s, ok := sentinels[code]; ok {
		reason = v1.ErrorReason(s)
	}
	info := map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": v1.ProtocolDomain}
	if e.Data != nil {
		md := map[string]string{"code": e.Data.Code}
		for k, v := range e.Data.Fields {
			md["field."+k] = v
		}
		info["metadata"] = md
	}
	return info
}

func v1Error(e *RPCError) *v1RPCError {
	code := e.Code
	if e.status == http.StatusUnauthorized {
		code = CodeUnauthenticated
	}
	return &v1RPCError{Code: code, Message: e.Message, Data: []map[string]any{errorInfo(code, e)}}
}

// restError is e as HTTP+JSON answers it: an HTTP status and a
// google.rpc.Status body.
func restError(e *RPCError) (int, map[string]any) {
	code := e.Code
	if e.status == http.StatusUnauthorized {
		code = CodeUnauthenticated
	}
	status, grpc := http.StatusInternalServerError, "INTERNAL"
	switch code {
	case CodeParseError, CodeInvalidRequest, CodeInvalidParams, CodeContentTypeNotSupp:
		status, grpc = http.StatusBadRequest, "INVALID_ARGUMENT"
	case CodeMethodNotFound:
		status, grpc = http.StatusNotImplemented, "UNIMPLEMENTED"
	case CodeTaskNotFound:
		status, grpc = http.StatusNotFound, "NOT_FOUND"
	case CodeTaskNotCancelable, CodePushNotSupported, CodeUnsupportedOperation, CodeNoExtendedCard, CodeVersionNotSupported:
		status, grpc = http.StatusBadRequest, "FAILED_PRECONDITION"
	case CodeUnauthenticated:
		status, grpc = http.StatusUnauthorized, "UNAUTHENTICATED"
	}
	switch e.status {
	case http.StatusTooManyRequests:
		status, grpc = e.status, "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		status, grpc = e.status, "UNAVAILABLE"
	case http.StatusNotFound:
		status, grpc = e.status, "NOT_FOUND"
	case http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		status, grpc = e.status, "INVALID_ARGUMENT"
	}
	return status, map[string]any{"error": map[string]any{
		"code": status, "status": grpc, "message": e.Message, "details": []map[string]any{errorInfo(code, e)},
	}}
}

// v1Value converts the 0.3 values tasks are kept as to 1.0's; anything
// else (already 1.0) is returned as it is.
func v1Value(v any) any {
	switch x := v.(type) {
	case *a2a.Task:
		return v1Task(x)
	case *a2a.Message:
		return v1Message(x)
	case *a2a.TaskStatusUpdateEvent:
		return &v1.TaskStatusUpdateEvent{TaskID: v1.TaskID(x.TaskID), ContextID: x.ContextID, Status: v1Status(x.Status), Metadata: x.Metadata}
	case *a2a.TaskArtifactUpdateEvent:
		return &v1.TaskArtifactUpdateEvent{TaskID: v1.TaskID(x.TaskID), ContextID: x.ContextID, Append: x.Append,
			LastChunk: x.LastChunk, Artifact: v1Artifact(x.Artifact), Metadata: x.Metadata}
	}
	return v
}

func v1Task(t *a2a.Task) *v1.Task {
	if t == nil {
		return nil
	}
	out := &v1.Task{ID: v1.TaskID(t.ID), ContextID: t.ContextID, Status: v1Status(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, v1Artifact(a))
	}
	for _, m := range t.History {
		out.History = append(out.History, v1Message(m))
	}
	return out
}

func v1Status(s a2a.TaskStatus) v1.TaskStatus {
	return v1.TaskStatus{State: v1State(s.State), Message: v1Message(s.Message), Timestamp: s.Timestamp}
}

var v1States = map[a2a.TaskState]v1.TaskState{
	a2a.TaskStateSubmitted: v1.TaskStateSubmitted, a2a.TaskStateWorking: v1.TaskStateWorking,
	a2a.TaskStateCompleted: v1.TaskStateCompleted, a2a.TaskStateFailed: v1.TaskStateFailed,
	a2a.TaskStateCanceled: v1.TaskStateCanceled, a2a.TaskStateRejected: v1.TaskStateRejected,
	a2a.TaskStateInputRequired: v1.TaskStateInputRequired, a2a.TaskStateAuthRequired: v1.TaskStateAuthRequired,
}

func v1State(s a2a.TaskState) v1.TaskState { return v1States[s] }

// v03State is the 0.3 state of a 1.0 one ("" when it is none).
func v03State(s v1.TaskState) a2a.TaskState {
	for k, v := range v1States {
		if v == s {
			return k
		}
	}
	return ""
}

func v1Message(m *a2a.Message) *v1.Message {
	if m == nil {
		return nil
	}
	role := v1.MessageRoleUser
	if m.Role == a2a.MessageRoleAgent {
		role = v1.MessageRoleAgent
	}
	out := &v1.Message{ID: m.ID, ContextID: m.ContextID, TaskID: v1.TaskID(m.TaskID), Role: role, Metadata: m.Metadata,
		Extensions: m.Extensions, Parts: v1Parts(m.Parts)}
	for _, id := range m.ReferenceTasks {
		out.ReferenceTasks = append(out.ReferenceTasks, v1.TaskID(id))
	}
	return out
}

func v1Artifact(a *a2a.Artifact) *v1.Artifact {
	if a == nil {
		return nil
	}
	return &v1.Artifact{ID: v1.ArtifactID(a.ID), Name: a.Name, Description: a.Description, Metadata: a.Metadata, Parts: v1Parts(a.Parts)}
}

func v1Parts(parts a2a.ContentParts) v1.ContentParts {
	out := v1.ContentParts{}
	for _, p := range parts {
		switch x := p.(type) {
		case a2a.TextPart:
			out = append(out, &v1.Part{Content: v1.Text(x.Text), Metadata: x.Metadata})
		case a2a.DataPart:
			out = append(out, &v1.Part{Content: v1.Data{Value: x.Data}, Metadata: x.Metadata, MediaType: "application/json"})
		case a2a.FilePart:
			switch f := x.File.(type) {
			case a2a.FileBytes:
				raw, err := base64.StdEncoding.DecodeString(f.Bytes)
				if err != nil {
					continue // made here from bytes; never malformed
				}
				out = append(out, &v1.Part{Content: v1.Raw(raw), Filename: f.Name, MediaType: f.MimeType, Metadata: x.Metadata})
			case a2a.FileURI:
				out = append(out, &v1.Part{Content: v1.URL(f.URI), Filename: f.Name, MediaType: f.MimeType, Metadata: x.Metadata})
			}
		}
	}
	return out
}

// v03Message is a 1.0 message as the 0.3 value turns take: its file
// parts (raw bytes or a URL) become 0.3's file parts, which a turn
// refuses with a clear error while agents take text alone.
func v03Message(m *v1.Message) *a2a.Message {
	if m == nil {
		return nil
	}
	role := a2a.MessageRoleUser
	if m.Role == v1.MessageRoleAgent {
		role = a2a.MessageRoleAgent
	}
	out := &a2a.Message{ID: m.ID, ContextID: m.ContextID, TaskID: a2a.TaskID(m.TaskID), Role: role, Metadata: m.Metadata,
		Extensions: m.Extensions}
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case v1.Text:
			out.Parts = append(out.Parts, a2a.TextPart{Text: string(c), Metadata: p.Metadata})
		case v1.Data:
			data, _ := c.Value.(map[string]any)
			out.Parts = append(out.Parts, a2a.DataPart{Data: data, Metadata: p.Metadata})
		case v1.Raw:
			out.Parts = append(out.Parts, a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{Name: p.Filename, MimeType: p.MediaType},
				Bytes: base64.StdEncoding.EncodeToString(c)}, Metadata: p.Metadata})
		case v1.URL:
			out.Parts = append(out.Parts, a2a.FilePart{File: a2a.FileURI{FileMeta: a2a.FileMeta{Name: p.Filename, MimeType: p.MediaType},
				URI: string(c)}, Metadata: p.Metadata})
		default:
			out.Parts = append(out.Parts, a2a.FilePart{File: a2a.FileURI{URI: "about:blank"}})
		}
	}
	return out
}

// camelKeys rewrites the snake_case member names of a 1.0 request to
// camelCase, as ProtoJSON parsers accept both ("task_id" for "taskId"),
// leaving what metadata and data parts hold as it is.
func camelKeys(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte("_")) {
		return raw
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw // the decoder says what is wrong
	}
	out, err := json.Marshal(camelValue(v))
	if err != nil {
		return raw
	}
	return out
}

func camelValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if k != "metadata" && k != "data" {
				val = camelValue(val)
			}
			if strings.Contains(k, "_") {
				k = camelName(k)
			}
			out[k] = val
		}
		return out
	case []any:
		for i := range x {
			x[i] = camelValue(x[i])
		}
	}
	return v
}

func camelName(k string) string {
	parts := strings.Split(k, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}
