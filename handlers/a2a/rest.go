package a2a

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// Routes is everything under /a2a: for the concierge (/a2a) and for each
// agent (/a2a/{id}), JSON-RPC (POST on the url, 0.3 and 1.0), the card
// (GET on the url, at <url>/.well-known/agent-card.json where clients
// given only the url look, or at <url>/agent-card.json), and A2A 1.0's
// HTTP+JSON binding under the url.
func (s *Server) Routes() http.Handler {
	r := chi.NewRouter()
	r.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.endpoint(w, r, "", "") })
	r.HandleFunc("/*", func(w http.ResponseWriter, r *http.Request) {
		path := chi.URLParam(r, "*")
		first, rest, _ := strings.Cut(path, "/")
		switch first {
		case "message:send", "message:stream", "tasks", "extendedAgentCard", "agent-card.json", ".well-known":
			s.endpoint(w, r, "", path) // the concierge's
		default:
			s.endpoint(w, r, first, rest)
		}
	})
	return r
}

// wellKnownCard is where a client given only an agent's url looks for its
// card: <url>/.well-known/agent-card.json (a2a-go joins the paths; the JS
// SDK resolves the relative path, so it is given the url with a final
// slash).
const wellKnownCard = ".well-known/agent-card.json"

// isCardPath: path under an agent's url is its card.
func isCardPath(path string) bool {
	return path == "" || path == "agent-card.json" || path == wellKnownCard
}

// endpoint serves path under the url of scope (an agent id, or "" for the
// concierge).
func (s *Server) endpoint(w http.ResponseWriter, r *http.Request, scope, path string) {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	switch {
	case path == "" && method == http.MethodPost:
		s.serve(w, r, scope)
		return
	case path != "" && isCardPath(path) && method == http.MethodOptions:
		// A card is a public document; the url itself (POST) is not
		// opened to other origins.
		httpkit.Preflight(w, r)
		return
	case isCardPath(path) && method == http.MethodGet:
		if scope == "" {
			s.NodeCard(w, r)
			return
		}
		if c, modified, ok := s.agentCardFor(w, r, scope); ok {
			s.writeCard(w, r, c, modified)
		}
		return
	case isCardPath(path):
		notAllowed(w, "GET, POST")
		return
	}
	s.rest(w, r, method, scope, path)
}

func notAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	httpkit.WriteJSONError(w, &httpkit.Error{Status: http.StatusMethodNotAllowed, Code: string(agent.CodeMethodNotAllowed),
		Message: "This URL answers " + allow + " only: POST JSON-RPC to the agent's url, GET it for the card."})
}

var errNoSuchREST = &RPCError{Code: CodeMethodNotFound, status: http.StatusNotFound,
	Message: "No such A2A HTTP+JSON route: see the card's supportedInterfaces (message:send, message:stream, tasks, tasks/{id}, " +
		"tasks/{id}:cancel, tasks/{id}:subscribe, tasks/{id}/pushNotificationConfigs, extendedAgentCard)."}

// rest serves A2A 1.0's HTTP+JSON binding.
func (s *Server) rest(w http.ResponseWriter, r *http.Request, method, scope, path string) {
	c := &call{d: dialectREST}
	if v := r.Header.Get(versionHeader); !supportedVersion(v) || strings.HasPrefix(strings.TrimSpace(v), "0.") {
		c.fail(w, versionNotSupported(v))
		return
	}
	who, rerr := s.caller(r)
	if rerr != nil {
		c.fail(w, rerr)
		return
	}
	want := func(m string) bool {
		if method != m {
			notAllowed(w, m)
			return false
		}
		return true
	}
	switch {
	case path == "message:send" || path == "message:stream":
		if !want(http.MethodPost) {
			return
		}
		c.stream, c.wrap = path == "message:stream", true
		var p v1.SendMessageRequest
		if !readREST(w, r, c, &p) {
			return
		}
		mp, push := fromV1Send(p)
		s.message(w, r, c, who, scope, mp, push)
	case path == "extendedAgentCard":
		if want(http.MethodGet) {
			s.extendedCard(w, r, c, who, scope)
		}
	case path == "tasks":
		if want(http.MethodGet) {
			q, err := listQueryParams(r)
			if err != nil {
				c.fail(w, err)
				return
			}
			s.listTasks(w, c, who, scope, q)
		}
	case strings.HasPrefix(path, "tasks/"):
		s.restTask(w, r, c, who, method, scope, strings.TrimPrefix(path, "tasks/"))
	default:
		c.fail(w, errNoSuchREST)
	}
}

// restTask serves tasks/{id}, its :cancel and :subscribe, and its push
// notification configs.
func (s *Server) restTask(w http.ResponseWriter, r *http.Request, c *call, who caller, method, scope, path string) {
	id, sub, _ := strings.Cut(path, "/")
	switch {
	case sub == "" && strings.HasSuffix(id, ":cancel") && method == http.MethodPost:
		s.cancelTask(w, r, c, who, scope, a2a.TaskID(strings.TrimSuffix(id, ":cancel")))
	case sub == "" && strings.HasSuffix(id, ":subscribe") && (method == http.MethodPost || method == http.MethodGet):
		c.stream = true
		s.subscribe(w, r, c, who, scope, a2a.TaskID(strings.TrimSuffix(id, ":subscribe")))
	case sub == "" && method == http.MethodGet:
		var hl *int
		if v := r.URL.Query().Get("historyLength"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				c.fail(w, invalidParams("historyLength must be a whole number, 0 or more."))
				return
			}
			hl = &n
		}
		s.getTask(w, c, who, scope, a2a.TaskID(id), hl)
	case sub == "pushNotificationConfigs" && method == http.MethodPost:
		var pc v1.PushConfig
		if !readREST(w, r, c, &pc) {
			return
		}
		pc.TaskID = v1.TaskID(id)
		s.restPush(w, r, c, who, scope, mCreatePush, pc)
	case sub == "pushNotificationConfigs" && method == http.MethodGet:
		s.restPush(w, r, c, who, scope, mListPush, v1.PushConfig{TaskID: v1.TaskID(id)})
	case strings.HasPrefix(sub, "pushNotificationConfigs/") && (method == http.MethodGet || method == http.MethodDelete):
		m := mGetPush
		if method == http.MethodDelete {
			m = mDeletePush
		}
		s.restPush(w, r, c, who, scope, m, v1.PushConfig{TaskID: v1.TaskID(id), ID: strings.TrimPrefix(sub, "pushNotificationConfigs/")})
	default:
		c.fail(w, errNoSuchREST)
	}
}

func (s *Server) restPush(w http.ResponseWriter, r *http.Request, c *call, who caller, scope, method string, pc v1.PushConfig) {
	params, err := json.Marshal(pc)
	if err != nil {
		c.fail(w, errParse)
		return
	}
	s.pushRPC(w, r, c, who, scope, Request{JSONRPC: "2.0", Method: method, Params: params})
}

// readREST reads a JSON body into v, answering and returning false when
// it cannot.
func readREST(w http.ResponseWriter, r *http.Request, c *call, v any) bool {
	if r.ContentLength > MaxBodyBytes {
		c.fail(w, &RPCError{Code: CodeInvalidRequest, status: http.StatusRequestEntityTooLarge, Message: httpkit.ErrTooLarge.Message})
		return false
	}
	if !jsonContent(r) {
		c.fail(w, errNotJSON)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	body, err := io.ReadAll(r.Body) // to the end: that lifts the body read deadline
	if err == nil {
		err = json.Unmarshal(camelKeys(body), v)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		var he *httpkit.Error
		switch {
		case errors.As(err, &mbe):
			c.fail(w, &RPCError{Code: CodeInvalidRequest, status: http.StatusRequestEntityTooLarge, Message: httpkit.ErrTooLarge.Message})
		case errors.As(err, &he):
			re, _ := rpcError(he)
			c.fail(w, re)
		default:
			c.fail(w, invalidParams("The body is not the JSON the route takes: "+safeJSONError(err)))
		}
		return false
	}
	return true
}

// listQueryParams reads ListTasks' query parameters.
func listQueryParams(r *http.Request) (v1.ListTasksRequest, *RPCError) {
	q := r.URL.Query()
	out := v1.ListTasksRequest{ContextID: q.Get("contextId"), Status: v1.TaskState(q.Get("status")), PageToken: q.Get("pageToken")}
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return out, invalidParams("pageSize must be a whole number between 1 and 100.")
		}
		out.PageSize = n
	}
	if v := q.Get("historyLength"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return out, invalidParams("historyLength must be a whole number, 0 or more.")
		}
		out.HistoryLength = &n
	}
	if v := q.Get("statusTimestampAfter"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return out, invalidParams("statusTimestampAfter must be an RFC 3339 time.")
		}
		out.StatusTimestampAfter = &t
	}
	if v := q.Get("includeArtifacts"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return out, invalidParams("includeArtifacts must be true or false.")
		}
		out.IncludeArtifacts = b
	}
	return out, nil
}
