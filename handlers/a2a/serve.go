package a2a

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// errRateLimited refuses a message over the client's chat budget.
var errRateLimited = &httpkit.Error{Status: http.StatusTooManyRequests, Code: string(agent.CodeRateLimited),
	Message: "Too many messages; wait a minute and try again.", RetryAfter: 60}

// Agent is POST /a2a/{id}: the JSON-RPC endpoint of any agent on the planet.
func (s *Server) Agent(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, chi.URLParam(r, "id"))
}

// Concierge is POST /a2a: the node's own agent, which finds agents or
// forwards a message to the one named in its metadata.
func (s *Server) Concierge(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, "")
}

// serve dispatches one JSON-RPC request made to the endpoint scope (an
// agent id, or "" for the concierge).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, scope string) {
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	switch req.Method {
	case "message/send", "message/stream":
		s.message(w, r, scope, req)
	case "tasks/get":
		s.getTask(w, r, scope, req)
	case "tasks/cancel":
		s.cancelTask(w, r, scope, req)
	case "tasks/resubscribe":
		answer(w, true, Response{ID: req.ID, Error: errNoResubscribe})
	case "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete":
		answer(w, false, Response{ID: req.ID, Error: errPushNotSupported})
	case "agent/getAuthenticatedExtendedCard":
		answer(w, false, Response{ID: req.ID, Error: errNoExtendedCard})
	default:
		answer(w, false, Response{ID: req.ID, Error: methodNotFound(req.Method)})
	}
}

// message serves message/send and message/stream: a turn with an agent as
// a task, or, on the concierge without an agent_id, a search.
func (s *Server) message(w http.ResponseWriter, r *http.Request, scope string, req Request) {
	stream := req.Method == "message/stream"
	if !s.Rates.Allow("ip:"+httpkit.ClientKey(r), s.now()) {
		writeHTTPError(w, errRateLimited)
		return
	}
	var p a2a.MessageSendParams
	if err := decodeParams(req.Params, &p); err != nil {
		answer(w, stream, Response{ID: req.ID, Error: err})
		return
	}
	text, rerr := messageText(p.Message)
	if rerr == nil && p.Message.TaskID != "" {
		rerr = s.followUp(p.Message.TaskID, scope)
	}
	if rerr != nil {
		answer(w, stream, Response{ID: req.ID, Error: rerr})
		return
	}
	agentID := scope
	if scope == "" {
		agentID = metadataAgentID(p)
		if agentID == "" {
			s.findAgents(w, r, req, p.Message, text, stream)
			return
		}
	}
	trace, ok := agent.TraceFrom(p.Message.Metadata)
	if !ok {
		answer(w, stream, Response{ID: req.ID, Error: invalidParams("metadata." + agent.TraceMetaKey + " is malformed or over the hop limit")})
		return
	}
	if trace.ID == "" {
		trace = agent.NewTrace()
	}
	trace = trace.WithQuota(s.Rates.Quota(s.now, "ip:"+httpkit.ClientKey(r))) // its delegated turns count as the client's
	s.turn(w, r, req, turnSpec{scope: scope, agentID: agentID, msg: p.Message, text: text, config: p.Config, trace: trace}, stream)
}

// decodeParams reads params into v, an invalid-params error otherwise.
func decodeParams(raw json.RawMessage, v any) *RPCError {
	if len(raw) == 0 || string(raw) == "null" {
		return invalidParams("params are required.")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidParams("params do not match the method: " + safeJSONError(err))
	}
	return nil
}

// safeJSONError names what was wrong in params without echoing them.
func safeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return "field " + te.Field + " has the wrong type"
	}
	if strings.Contains(err.Error(), "part kind") || strings.Contains(err.Error(), "file part") {
		return "a message part is malformed"
	}
	return "malformed"
}

// messageText is the text of a message: its text parts, joined.
func messageText(m *a2a.Message) (string, *RPCError) {
	if m == nil {
		return "", invalidParams("params.message is required.")
	}
	var texts []string
	for _, p := range m.Parts {
		if tp, ok := p.(a2a.TextPart); ok {
			texts = append(texts, tp.Text)
		}
	}
	switch {
	case len(texts) > 0:
		return strings.Join(texts, "\n"), nil
	case len(m.Parts) > 0:
		return "", errOnlyText
	}
	return "", invalidParams("params.message has no parts: send the text as a text part.")
}

// followUp answers a message naming a task: every turn here is a task of
// its own that ends with the reply, so none takes more input.
func (s *Server) followUp(id a2a.TaskID, scope string) *RPCError {
	if s.tasks.get(id, scope, s.now()) == nil {
		return errTaskNotFound
	}
	return errTaskFinishedInput
}

// metadataAgentID is the agent a concierge message is for: metadata
// agent_id on the message, or on the request.
func metadataAgentID(p a2a.MessageSendParams) string {
	for _, md := range []map[string]any{p.Message.Metadata, p.Metadata} {
		if id, ok := md["agent_id"].(string); ok && strings.TrimSpace(id) != "" {
			return strings.TrimSpace(id)
		}
	}
	return ""
}

// getTask is tasks/get.
func (s *Server) getTask(w http.ResponseWriter, r *http.Request, scope string, req Request) {
	if t, q := s.requestedTask(w, scope, req); t != nil {
		answer(w, false, result(req.ID, t.snapshot(q.HistoryLength)))
	}
}

// cancelTask is tasks/cancel: it cancels the turn's context, end to end
// (a remote agent's host sees its stream close), and answers once the
// turn has stopped.
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request, scope string, req Request) {
	t, _ := s.requestedTask(w, scope, req)
	if t == nil {
		return
	}
	t.requestCancel()
	select {
	case <-t.done:
	case <-r.Context().Done():
		return
	}
	if t.currentState() != a2a.TaskStateCanceled { // it ended first
		answer(w, false, Response{ID: req.ID, Error: errTaskEnded})
		return
	}
	answer(w, false, result(req.ID, t.snapshot(nil)))
}

// requestedTask is the task a tasks/* request names (tasks/cancel's
// params are a subset of tasks/get's); when there is none it answers and
// returns nil.
func (s *Server) requestedTask(w http.ResponseWriter, scope string, req Request) (*task, a2a.TaskQueryParams) {
	var q a2a.TaskQueryParams
	if err := decodeParams(req.Params, &q); err != nil {
		answer(w, false, Response{ID: req.ID, Error: err})
		return nil, q
	}
	t := s.tasks.get(q.ID, scope, s.now())
	if t == nil {
		answer(w, false, Response{ID: req.ID, Error: errTaskNotFound})
	}
	return t, q
}
