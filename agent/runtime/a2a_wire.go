package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	a2a1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentsite/agentsite/agent"
)

// a2aOp is one call of the a2a backend, whatever the wire: A2A 0.3
// JSON-RPC, 1.0 JSON-RPC or 1.0 HTTP+JSON (REST).
type a2aOp int

const (
	opSend      a2aOp = iota // a blocking send: one Task or Message
	opStream                 // a streaming send: server-sent events
	opGet                    // the task as it stands
	opCancel                 // cancel the task
	opSubscribe              // the task's events again, after a dropped stream
)

// A2A 1.0 JSON-RPC methods.
var v1Methods = map[a2aOp]string{
	opSend: "SendMessage", opStream: "SendStreamingMessage", opGet: "GetTask",
	opCancel: "CancelTask", opSubscribe: "SubscribeToTask",
}

// A2A 0.3 JSON-RPC methods.
var v03Methods = map[a2aOp]string{
	opSend: a2aMethodSend, opStream: a2aMethodStream, opGet: a2aMethodGet,
	opCancel: "tasks/cancel", opSubscribe: "tasks/resubscribe",
}

// a2aVersionHeader and a2aVersion are the A2A 1.0 version service
// parameter, sent with every 1.0 call.
const (
	a2aVersionHeader = "A2A-Version"
	a2aVersion       = "1.0"
)

func (op a2aOp) streams() bool { return op == opStream || op == opSubscribe }

// a2aCall makes one call on card's interface with the guarded client and
// returns the response to read (a2aRead), or a classified error for a
// non-2xx status. msg is the message of a send; taskID the task of the
// others. key, if set, goes in the card's API key header or as a bearer
// token, and only to an endpoint on the card's own site.
func (r *Runtime) a2aCall(ctx context.Context, card a2aCard, key string, op a2aOp, msg *a2a.Message, taskID a2a.TaskID) (*http.Response, error) {
	if key != "" && !card.keySite {
		return nil, kindError(agent.ErrBackendRejected, agent.BackendA2A,
			"the agent card puts its endpoint on another site than the card; this node does not send the agent's API key there")
	}
	method, target, body := http.MethodPost, card.endpoint, any(nil)
	switch {
	case !card.v1:
		var params any = &a2a.TaskIDParams{ID: taskID}
		switch op {
		case opSend, opStream:
			p := &a2a.MessageSendParams{Message: msg}
			if op == opSend {
				blocking := true
				p.Config = &a2a.MessageSendConfig{Blocking: &blocking}
			}
			params = p
		case opGet:
			params = &a2a.TaskQueryParams{ID: taskID}
		}
		body = rpcRequest{JSONRPC: "2.0", ID: a2a.NewMessageID(), Method: v03Methods[op], Params: params}
	case card.binding == bindingJSONRPC:
		body = rpcRequest{JSONRPC: "2.0", ID: a2a.NewMessageID(), Method: v1Methods[op], Params: v1Params(card, op, msg, taskID)}
	default: // 1.0 HTTP+JSON
		base := strings.TrimRight(card.endpoint, "/")
		if card.tenant != "" {
			base += "/" + url.PathEscape(card.tenant)
		}
		task := base + "/tasks/" + url.PathEscape(string(taskID))
		switch op {
		case opSend:
			target, body = base+"/message:send", v1Params(card, op, msg, taskID)
		case opStream:
			target, body = base+"/message:stream", v1Params(card, op, msg, taskID)
		case opGet:
			method, target = http.MethodGet, task
		case opCancel:
			target, body = task+":cancel", struct{}{}
		case opSubscribe:
			target, body = task+":subscribe", struct{}{}
		}
	}
	accept := "application/json"
	if op.streams() {
		accept = "text/event-stream, application/json"
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	bearer := key
	if card.keyHeader != "" {
		bearer = ""
	}
	req, err := r.newRequest(ctx, method, target, accept, bearer, rd)
	if err != nil {
		return nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if card.keyHeader != "" && key != "" {
		req.Header.Set(card.keyHeader, key)
	}
	if card.v1 {
		req.Header.Set(a2aVersionHeader, a2aVersion)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, statusError(agent.BackendA2A, resp, key)
	}
	return resp, nil
}

// v1Params is the A2A 1.0 request of op.
func v1Params(card a2aCard, op a2aOp, msg *a2a.Message, taskID a2a.TaskID) any {
	id := a2a1.TaskID(taskID)
	switch op {
	case opSend, opStream:
		return &a2a1.SendMessageRequest{Tenant: card.tenant, Message: v1Message(msg)}
	case opGet:
		return &a2a1.GetTaskRequest{Tenant: card.tenant, ID: id}
	case opCancel:
		return &a2a1.CancelTaskRequest{Tenant: card.tenant, ID: id}
	default:
		return &a2a1.SubscribeToTaskRequest{Tenant: card.tenant, ID: id}
	}
}

// v1Message is the user's message (text parts, ids, metadata) in 1.0's shape.
func v1Message(m *a2a.Message) *a2a1.Message {
	out := &a2a1.Message{ID: m.ID, Role: a2a1.MessageRoleUser, ContextID: m.ContextID, TaskID: a2a1.TaskID(m.TaskID), Metadata: m.Metadata}
	for _, p := range m.Parts {
		if t, ok := p.(a2a.TextPart); ok {
			out.Parts = append(out.Parts, a2a1.NewTextPart(t.Text))
		}
	}
	return out
}

// a2aRead hands each event of resp to on and closes the body: the events
// of a server-sent stream, or the one result of a JSON answer (an agent
// may answer a streaming call that way too). 1.0 events are mapped to 0.3
// types, which the turn follows.
func (r *Runtime) a2aRead(resp *http.Response, card a2aCard, op a2aOp, on func(a2a.Event) error) error {
	defer resp.Body.Close()
	one := func(data []byte) error {
		result := data
		if !card.v1 || card.binding == bindingJSONRPC {
			var res rpcResponse
			if err := json.Unmarshal(data, &res); err != nil {
				return fmt.Errorf("%w: the answer is not JSON-RPC: %w", agent.ErrBadBackendReply, err)
			}
			if res.Error != nil {
				return res.Error.backendError()
			}
			result = res.Result
		} else if e := restStreamError(data); e != nil {
			return e
		}
		ev, err := decodeA2AEvent(result, card.v1, op)
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

// restStreamError is the error event of a 1.0 HTTP+JSON stream
// ({"error": {code, status, message}}), or nil.
func restStreamError(data []byte) error {
	var e struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil || e.Error == nil {
		return nil
	}
	return (&rpcError{Code: e.Error.Code, Message: e.Error.Message}).backendError()
}

// decodeA2AEvent reads one result: 0.3's kind-tagged objects, or 1.0's
// StreamResponse ({"task"|"message"|"statusUpdate"|"artifactUpdate"}) and,
// for a get or cancel, a bare Task.
func decodeA2AEvent(result []byte, v1 bool, op a2aOp) (a2a.Event, error) {
	if !v1 {
		return a2a.UnmarshalEventJSON(result)
	}
	if op == opGet || op == opCancel {
		var t a2a1.Task
		if err := json.Unmarshal(result, &t); err != nil {
			return nil, err
		}
		if t.ID == "" {
			return nil, errors.New("a task without an id")
		}
		return fromV1Event(&t), nil
	}
	var sr a2a1.StreamResponse
	if err := json.Unmarshal(result, &sr); err != nil {
		return nil, err
	}
	if sr.Event == nil {
		return nil, errors.New("an empty event")
	}
	return fromV1Event(sr.Event), nil
}

// v1States maps A2A 1.0 task states to 0.3's.
var v1States = map[a2a1.TaskState]a2a.TaskState{
	a2a1.TaskStateSubmitted: a2a.TaskStateSubmitted, a2a1.TaskStateWorking: a2a.TaskStateWorking,
	a2a1.TaskStateInputRequired: a2a.TaskStateInputRequired, a2a1.TaskStateAuthRequired: a2a.TaskStateAuthRequired,
	a2a1.TaskStateCompleted: a2a.TaskStateCompleted, a2a1.TaskStateCanceled: a2a.TaskStateCanceled,
	a2a1.TaskStateFailed: a2a.TaskStateFailed, a2a1.TaskStateRejected: a2a.TaskStateRejected,
}

// fromV1Event maps what a turn reads of a 1.0 event to 0.3's types: ids,
// text and data parts, states, artifacts. A 1.0 status update has no
// final flag: a terminal or input-required state is final.
func fromV1Event(e a2a1.Event) a2a.Event {
	switch v := e.(type) {
	case *a2a1.Message:
		return fromV1Message(v)
	case *a2a1.Task:
		t := &a2a.Task{ID: a2a.TaskID(v.ID), ContextID: v.ContextID, Status: fromV1Status(v.Status)}
		for _, a := range v.Artifacts {
			if a != nil {
				t.Artifacts = append(t.Artifacts, fromV1Artifact(a))
			}
		}
		for _, m := range v.History {
			if m != nil {
				t.History = append(t.History, fromV1Message(m))
			}
		}
		return t
	case *a2a1.TaskStatusUpdateEvent:
		st := v.Status.State
		return &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(v.TaskID), ContextID: v.ContextID, Status: fromV1Status(v.Status),
			Final: st.Terminal() || st == a2a1.TaskStateInputRequired || st == a2a1.TaskStateAuthRequired}
	case *a2a1.TaskArtifactUpdateEvent:
		ev := &a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(v.TaskID), ContextID: v.ContextID, Append: v.Append, LastChunk: v.LastChunk}
		if v.Artifact != nil {
			ev.Artifact = fromV1Artifact(v.Artifact)
		}
		return ev
	}
	return &a2a.Message{} // unreachable: StreamResponse knows only these four
}

func fromV1Status(s a2a1.TaskStatus) a2a.TaskStatus {
	st, ok := v1States[s.State]
	if !ok {
		st = a2a.TaskStateUnknown
	}
	out := a2a.TaskStatus{State: st}
	if s.Message != nil {
		out.Message = fromV1Message(s.Message)
	}
	return out
}

func fromV1Message(m *a2a1.Message) *a2a.Message {
	role := a2a.MessageRoleAgent
	if m.Role == a2a1.MessageRoleUser {
		role = a2a.MessageRoleUser
	}
	return &a2a.Message{ID: m.ID, Role: role, ContextID: m.ContextID, TaskID: a2a.TaskID(m.TaskID), Parts: fromV1Parts(m.Parts)}
}

func fromV1Artifact(a *a2a1.Artifact) *a2a.Artifact {
	return &a2a.Artifact{ID: a2a.ArtifactID(a.ID), Name: a.Name, Parts: fromV1Parts(a.Parts)}
}

// fromV1Parts keeps text and data parts (data as an object, a bare value
// wrapped in {"value": …}); files are skipped as partsText skips them.
func fromV1Parts(parts a2a1.ContentParts) a2a.ContentParts {
	var out a2a.ContentParts
	for _, p := range parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case a2a1.Text:
			out = append(out, a2a.TextPart{Text: string(c)})
		case a2a1.Data:
			if m, ok := c.Value.(map[string]any); ok {
				out = append(out, a2a.DataPart{Data: m})
			} else {
				out = append(out, a2a.DataPart{Data: map[string]any{"value": c.Value}})
			}
		}
	}
	return out
}
