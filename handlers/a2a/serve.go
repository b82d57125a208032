package a2a

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// errRateLimited refuses a message over the client's chat budget.
var errRateLimited = &httpkit.Error{Status: http.StatusTooManyRequests, Code: string(agent.CodeRateLimited),
	Message: "Too many messages; wait a minute and try again.", RetryAfter: 60}

// isV1Method: the method is one of A2A 1.0's JSON-RPC binding.
func isV1Method(m string) bool {
	switch m {
	case mSendMessage, mSendStreamingMessage, mGetTask, mListTasks, mCancelTask, mSubscribeToTask,
		mCreatePush, mGetPush, mListPush, mDeletePush, mGetExtendedCard:
		return true
	}
	return false
}

// caller is who makes a request: a bearer token's account or the
// operator, an account signed in on the portal (its session cookie, from
// this node's own pages), or anonymous (owner ""). A token that does not
// verify is refused, never taken as anonymous.
type caller struct {
	owner     string // the key tasks are kept under; "" anonymous
	chatOwner chat.Owner
	authed    bool // a token or a session: the extended card's extras
}

func (s *Server) caller(r *http.Request) (caller, *RPCError) {
	if s.Accounts == nil {
		return caller{chatOwner: chat.A2AAnonymous}, nil
	}
	if r.Header.Get("Authorization") == "" {
		return s.sessionCaller(r)
	}
	p, err := s.Accounts.Bearer(r)
	if err != nil {
		re, e := rpcError(err)
		if e != nil {
			s.logFailure(r.Context(), "A2A caller refused", e, err)
		}
		return caller{}, re
	}
	o := p.Owner()
	return caller{owner: string(o), chatOwner: o, authed: true}, nil
}

// sessionCaller is the account signed in on the request's session, when
// the request comes from this node's own pages (SameOrigin); anonymous
// otherwise. A browser sends the cookie on requests other sites' pages
// make too, so without the origin those would act as the account (CSRF):
// such a request is served, as anyone's, but not as the account's.
func (s *Server) sessionCaller(r *http.Request) (caller, *RPCError) {
	anon := caller{chatOwner: chat.A2AAnonymous}
	if s.Sessions == nil || s.SameOrigin == nil || !s.SameOrigin(r) {
		return anon, nil
	}
	id, err := s.Sessions.SignedIn(r)
	if err != nil {
		re, e := rpcError(err)
		if e != nil {
			s.logFailure(r.Context(), "A2A session not loaded", e, err)
		}
		return caller{}, re
	}
	if id == 0 {
		return anon, nil
	}
	o := chat.UserOwner(id)
	return caller{owner: string(o), chatOwner: o, authed: true}, nil
}

// serve dispatches one JSON-RPC request (POST /a2a/{id}, or POST /a2a for
// the node's concierge, which finds agents or forwards a message to the
// one named in its metadata) made to the endpoint scope (an agent id, or
// "" for the concierge), in the dialect of its method.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, scope string) {
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	c := &call{d: dialect03, id: req.ID}
	if isV1Method(req.Method) {
		c.d = dialect10
	}
	c.stream = req.Method == "message/stream" || req.Method == "tasks/resubscribe" ||
		req.Method == mSendStreamingMessage || req.Method == mSubscribeToTask
	if v := r.Header.Get(versionHeader); !supportedVersion(v) {
		c.fail(w, versionNotSupported(v))
		return
	}
	if wants1(r) && c.d == dialect03 {
		// A 0.3 method asked under A2A-Version 1.0: 1.0 has no such
		// method. Answered in 1.0's terms, naming the versions served and
		// the method's 1.0 name, never with 0.3's semantics.
		c.d, c.stream = dialect10, false
		c.fail(w, notInVersion1(req.Method))
		return
	}
	who, rerr := s.caller(r)
	if rerr != nil {
		c.fail(w, rerr)
		return
	}
	if c.d == dialect10 {
		req.Params = camelKeys(req.Params)
	}
	switch req.Method {
	case "message/send", "message/stream":
		var p a2a.MessageSendParams
		if err := decodeParams(req.Params, &p); err != nil {
			c.fail(w, err)
			return
		}
		s.message(w, r, c, who, scope, p, nil)
	case mSendMessage, mSendStreamingMessage:
		c.wrap = true
		var p v1.SendMessageRequest
		if err := decodeParams(req.Params, &p); err != nil {
			c.fail(w, err)
			return
		}
		mp, push := fromV1Send(p)
		s.message(w, r, c, who, scope, mp, push)
	case "tasks/get", mGetTask:
		var q v1.GetTaskRequest // the same fields in 0.3 and 1.0
		if err := decodeParams(req.Params, &q); err != nil {
			c.fail(w, err)
			return
		}
		s.getTask(w, c, who, scope, a2a.TaskID(q.ID), q.HistoryLength)
	case "tasks/cancel", mCancelTask:
		var q v1.CancelTaskRequest
		if err := decodeParams(req.Params, &q); err != nil {
			c.fail(w, err)
			return
		}
		s.cancelTask(w, r, c, who, scope, a2a.TaskID(q.ID))
	case "tasks/resubscribe", mSubscribeToTask:
		var q v1.SubscribeToTaskRequest
		if err := decodeParams(req.Params, &q); err != nil {
			c.fail(w, err)
			return
		}
		s.subscribe(w, r, c, who, scope, a2a.TaskID(q.ID))
	case mListTasks:
		var q v1.ListTasksRequest
		if len(req.Params) > 0 && string(req.Params) != "null" {
			if err := decodeParams(req.Params, &q); err != nil {
				c.fail(w, err)
				return
			}
		}
		s.listTasks(w, c, who, scope, q)
	case mCreatePush, mGetPush, mListPush, mDeletePush,
		"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete":
		s.pushRPC(w, r, c, who, scope, req)
	case mGetExtendedCard, "agent/getAuthenticatedExtendedCard":
		s.extendedCard(w, r, c, who, scope)
	default:
		c.fail(w, methodNotFound(req.Method))
	}
}

// fromV1Send is a 1.0 SendMessageRequest as the 0.3 params turns take,
// and the push notification config it asks for (nil: none).
func fromV1Send(p v1.SendMessageRequest) (a2a.MessageSendParams, *v1.PushConfig) {
	out := a2a.MessageSendParams{Message: v03Message(p.Message), Metadata: p.Metadata}
	var push *v1.PushConfig
	if cfg := p.Config; cfg != nil {
		blocking := !cfg.ReturnImmediately
		out.Config = &a2a.MessageSendConfig{AcceptedOutputModes: cfg.AcceptedOutputModes, HistoryLength: cfg.HistoryLength, Blocking: &blocking}
		push = cfg.PushConfig
	}
	return out, push
}

// message serves message/send and message/stream (SendMessage and
// SendStreamingMessage): a turn with an agent as a task, or, on the
// concierge without an agent_id, a search answered as a task.
func (s *Server) message(w http.ResponseWriter, r *http.Request, c *call, who caller, scope string, p a2a.MessageSendParams, push *v1.PushConfig) {
	if !s.Rates.Allow("ip:"+httpkit.ClientKey(r), s.now()) {
		c.failHTTP(w, errRateLimited)
		return
	}
	if p.Config != nil && p.Config.PushConfig != nil && push == nil { // 0.3's
		pc := p.Config.PushConfig
		push = &v1.PushConfig{ID: pc.ID, URL: pc.URL, Token: pc.Token}
		if pc.Auth != nil && len(pc.Auth.Schemes) > 0 {
			push.Auth = &v1.PushAuthInfo{Scheme: pc.Auth.Schemes[0], Credentials: pc.Auth.Credentials}
		}
	}
	var pushCfg *pushConfig
	if push != nil {
		pc, err := s.checkPush(r.Context(), *push, c.d)
		if err != nil {
			c.fail(w, err)
			return
		}
		pushCfg = &pc
	}
	text, rerr := messageText(p.Message)
	approval, aerr := messageApproval(p.Message)
	if aerr != nil {
		c.fail(w, aerr)
		return
	}
	if approval != nil && (rerr == errOnlyText || strings.TrimSpace(text) == "") {
		// An answer to an approval alone: the conversation keeps it in a
		// word.
		text, rerr = "Deny", nil
		if approval.Approve {
			text = "Approve"
		}
	}
	var resume *task
	if rerr == nil && p.Message.TaskID != "" {
		resume, rerr = s.followUp(p.Message, scope, who)
	}
	if rerr != nil {
		c.fail(w, rerr)
		return
	}
	agentID := scope
	if resume != nil {
		agentID = resume.agentID
	} else if scope == "" {
		agentID = metadataAgentID(p)
		if agentID == "" {
			s.findAgents(w, r, c, who, p.Message, text)
			return
		}
	}
	trace, ok := agent.TraceFrom(p.Message.Metadata)
	if !ok {
		c.fail(w, invalidParams("metadata."+agent.TraceMetaKey+" is malformed or over the hop limit"))
		return
	}
	if trace.ID == "" {
		trace = agent.NewTrace()
	}
	trace = trace.WithQuota(s.Rates.Quota(s.now, "ip:"+httpkit.ClientKey(r))) // its delegated turns count as the client's
	if resume != nil && pushCfg != nil {
		pushCfg.taskID = resume.id
		if err := s.addPush(resume, *pushCfg); err != nil {
			c.fail(w, err)
			return
		}
	}
	s.turn(w, r, c, turnSpec{scope: scope, agentID: agentID, msg: p.Message, text: text, config: p.Config, trace: trace,
		who: who, push: pushCfg, approval: approval}, resume)
}

// failHTTP answers a failure of the HTTP exchange (too many requests,
// busy): with its status and a JSON-RPC error body in 0.3, as 0.3 clients
// expect; as the dialect's error otherwise.
func (c *call) failHTTP(w http.ResponseWriter, e *httpkit.Error) {
	if c.d == dialect03 {
		writeHTTPError(w, e)
		return
	}
	httpkit.SetRetryAfter(w, e)
	re, _ := rpcError(e)
	if c.d == dialectREST {
		c.fail(w, re)
		return
	}
	c.stream = false
	writeV1(w, e.Status, v1Response{ID: c.id, Error: v1Error(re)})
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
	if strings.Contains(err.Error(), "part kind") || strings.Contains(err.Error(), "file part") ||
		strings.Contains(err.Error(), "part") {
		return "a message part is malformed"
	}
	return "malformed"
}

// messageText is the text of a message: its text parts, joined. A file
// part is refused (ContentTypeNotSupportedError): agents here take text.
func messageText(m *a2a.Message) (string, *RPCError) {
	if m == nil {
		return "", invalidParams("params.message is required.")
	}
	var texts []string
	for _, p := range m.Parts {
		switch x := p.(type) {
		case a2a.TextPart:
			texts = append(texts, x.Text)
		case a2a.FilePart: // agents here take text; a file would be dropped unread
			return "", errOnlyText
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

// ApprovalDataKey is the key of a data part that carries a tool call
// waiting for approval (from the agent, with the input-required status)
// or the answer to one (from the client: {"id": ..., "approve": true}).
const ApprovalDataKey = "approval"

// messageApproval is the answer to an approval a message carries in a
// data part ({"approval": {"id": ..., "approve": true}}), nil when none.
func messageApproval(m *a2a.Message) (*agent.ApprovalAnswer, *RPCError) {
	if m == nil {
		return nil, nil
	}
	for _, p := range m.Parts {
		d, ok := p.(a2a.DataPart)
		if !ok {
			continue
		}
		v, ok := d.Data[ApprovalDataKey]
		if !ok {
			continue
		}
		raw, _ := json.Marshal(v)
		var a agent.ApprovalAnswer
		if json.Unmarshal(raw, &a) != nil || a.ID == "" || len(a.ID) > agent.MaxApprovalIDLen {
			return nil, invalidParams(`The approval data part must be {"approval": {"id": "<the id the task's status gave>", "approve": true}} (or "approve": false).`)
		}
		return &a, nil
	}
	return nil, nil
}

// followUp is the task a message naming one continues: one whose agent
// asked for input (it waits in input-required). Any other task takes no
// further input: each turn here is a task of its own that ends with the
// reply, unless its agent asks for more.
func (s *Server) followUp(m *a2a.Message, scope string, who caller) (*task, *RPCError) {
	t := s.tasks.get(m.TaskID, scope, who.owner, s.now())
	switch {
	case t == nil:
		return nil, errTaskNotFound
	case t.currentState() != a2a.TaskStateInputRequired:
		return nil, errTaskFinishedInput
	case m.ContextID != "" && m.ContextID != t.contextID:
		return nil, invalidParams("The message's contextId is not its task's: send the task's contextId, or none.")
	}
	return t, nil
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

// getTask is tasks/get (GetTask).
func (s *Server) getTask(w http.ResponseWriter, c *call, who caller, scope string, id a2a.TaskID, historyLength *int) {
	t := s.tasks.get(id, scope, who.owner, s.now())
	if t == nil {
		c.fail(w, errTaskNotFound)
		return
	}
	c.ok(w, t.snapshot(historyLength))
}

// cancelTask is tasks/cancel (CancelTask): it cancels the turn's context,
// end to end (a remote agent's host sees its stream close), and answers
// once the turn has stopped.
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request, c *call, who caller, scope string, id a2a.TaskID) {
	t := s.tasks.get(id, scope, who.owner, s.now())
	if t == nil {
		c.fail(w, errTaskNotFound)
		return
	}
	if !t.cancelWaiting(s.now()) {
		t.requestCancel()
		select {
		case <-t.turnDone():
		case <-r.Context().Done():
			return
		}
	}
	if t.currentState() != a2a.TaskStateCanceled { // it ended first
		c.fail(w, errTaskEnded)
		return
	}
	c.ok(w, t.snapshot(nil))
}
