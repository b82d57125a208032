package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// Limits of push notifications. The callback URL is the caller's: it is
// checked against PushPolicy when a config is made, and called only through
// the guarded client (PushClient), whose SSRF guard refuses non-public
// addresses at connect time, after DNS and on redirects. Whatever the
// operator allows agent backends, push never reaches a private address.
const (
	maxPushConfigs  = 4    // per task
	maxPushURLBytes = 2048 // a callback URL
	maxPushSecret   = 1024 // a token or credentials
	pushAttempts    = 3    // tries of one notification
	pushTimeout     = 10 * time.Second
	// Push config writes (creates and deletes) a minute, with a burst of
	// a sixth (httpkit.Rates): a client that sets up the callbacks of a few
	// dozen tasks at once stays below, one that churns configs is refused.
	// A write costs little (a task has one follower however many configs
	// come and go), so the caller's budget is the looser one.
	pushWritesPerCaller = 240
	pushWritesPerTask   = 30
)

// pushConfig is where to tell of a task's changes, and how to prove it is
// this node telling.
type pushConfig struct {
	id, url, token string
	scheme, secret string // Authorization: <scheme> <secret>, if set
	taskID         a2a.TaskID
	d              dialect // the payload's: a 0.3 Task, or a 1.0 StreamResponse
}

func (p pushConfig) v1() *v1.PushConfig {
	out := &v1.PushConfig{TaskID: v1.TaskID(p.taskID), ID: p.id, URL: p.url, Token: p.token}
	if p.scheme != "" {
		out.Auth = &v1.PushAuthInfo{Scheme: p.scheme} // credentials are never shown back
	}
	return out
}

func (p pushConfig) v03() *a2a.TaskPushConfig {
	out := &a2a.TaskPushConfig{TaskID: p.taskID, Config: a2a.PushConfig{ID: p.id, URL: p.url, Token: p.token}}
	if p.scheme != "" {
		out.Config.Auth = &a2a.PushAuthInfo{Schemes: []string{p.scheme}}
	}
	return out
}

// checkPush validates a push config a caller sent.
func (s *Server) checkPush(_ context.Context, in v1.PushConfig, d dialect) (pushConfig, *RPCError) {
	u, err := url.Parse(in.URL)
	switch {
	case in.URL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil:
		return pushConfig{}, invalidParams("The push notification url must be an absolute http(s) URL of a public host, without user:password (send credentials as authentication).")
	case s.PushPolicy.CheckURL(in.URL) != nil:
		return pushConfig{}, invalidParams("The push notification url must name a public host: this node never sends push notifications to loopback, private or other special-purpose addresses.")
	case len(in.URL) > maxPushURLBytes:
		return pushConfig{}, invalidParams("The push notification url is too long (2,048 bytes at most).")
	case len(in.Token) > maxPushSecret || in.Auth != nil && len(in.Auth.Credentials) > maxPushSecret:
		return pushConfig{}, invalidParams("The push notification token or credentials are too long (1,024 bytes at most).")
	case len(in.ID) > 128:
		return pushConfig{}, invalidParams("The push notification config id is too long (128 bytes at most).")
	}
	p := pushConfig{id: in.ID, url: in.URL, token: in.Token, taskID: a2a.TaskID(in.TaskID), d: d}
	if p.id == "" {
		p.id = newID()
	}
	if in.Auth != nil && in.Auth.Credentials != "" {
		switch in.Auth.Scheme {
		case "Bearer", "bearer", "Basic", "basic":
			p.scheme, p.secret = in.Auth.Scheme, in.Auth.Credentials
		default:
			return pushConfig{}, invalidParams(`The push notification authentication scheme must be "Bearer" or "Basic".`)
		}
	}
	return p, nil
}

// pushParams are the params of every push config method, 0.3's and 1.0's.
type pushParams struct {
	v1.PushConfig
	// 0.3: set's {taskId, pushNotificationConfig}; get/list/delete's {id,
	// pushNotificationConfigId}.
	Config03   *a2a.PushConfig `json:"pushNotificationConfig"`
	ConfigID03 string          `json:"pushNotificationConfigId"`
}

// pushRPC serves the push notification config methods.
func (s *Server) pushRPC(w http.ResponseWriter, r *http.Request, c *call, who caller, scope string, req Request) {
	var p pushParams
	if err := decodeParams(req.Params, &p); err != nil {
		c.fail(w, err)
		return
	}
	taskID, cfgID := a2a.TaskID(p.TaskID), p.ID
	if c.d == dialect03 {
		switch req.Method {
		case "tasks/pushNotificationConfig/set":
			if p.Config03 == nil {
				c.fail(w, invalidParams("params.pushNotificationConfig is required."))
				return
			}
			pc := p.Config03
			p.PushConfig = v1.PushConfig{TaskID: p.TaskID, ID: pc.ID, URL: pc.URL, Token: pc.Token}
			if pc.Auth != nil && len(pc.Auth.Schemes) > 0 {
				p.Auth = &v1.PushAuthInfo{Scheme: pc.Auth.Schemes[0], Credentials: pc.Auth.Credentials}
			}
		default:
			taskID, cfgID = a2a.TaskID(p.ID), p.ConfigID03
		}
	}
	t := s.tasks.get(taskID, scope, who.owner, s.now())
	if t == nil {
		c.fail(w, errTaskNotFound)
		return
	}
	switch req.Method {
	case mCreatePush, "tasks/pushNotificationConfig/set", mDeletePush, "tasks/pushNotificationConfig/delete":
		if !s.allowPushWrite(r, who, t) {
			c.failHTTP(w, errPushRateLimited)
			return
		}
	}
	switch req.Method {
	case mCreatePush, "tasks/pushNotificationConfig/set":
		pc, err := s.checkPush(context.Background(), p.PushConfig, c.d)
		if err != nil {
			c.fail(w, err)
			return
		}
		pc.taskID = t.id
		if err := s.addPush(t, pc); err != nil {
			c.fail(w, err)
			return
		}
		c.ok(w, pushOut(c, pc))
	case mGetPush, "tasks/pushNotificationConfig/get":
		for _, pc := range t.pushList() {
			if pc.id == cfgID || cfgID == "" {
				c.ok(w, pushOut(c, pc))
				return
			}
		}
		c.fail(w, errNoPushConfig)
	case mListPush, "tasks/pushNotificationConfig/list":
		list := t.pushList()
		if c.d == dialect03 {
			out := []*a2a.TaskPushConfig{}
			for _, pc := range list {
				out = append(out, pc.v03())
			}
			c.ok(w, out)
			return
		}
		out := &v1.ListTaskPushConfigResponse{Configs: []*v1.PushConfig{}}
		for _, pc := range list {
			out.Configs = append(out.Configs, pc.v1())
		}
		c.ok(w, out)
	default: // delete: idempotent, as the specification wants
		t.deletePush(cfgID)
		if c.d == dialect03 {
			c.ok(w, nil)
			return
		}
		c.ok(w, struct{}{})
	}
}

// errPushRateLimited answers a caller, or a task, over its budget of push
// config writes.
var errPushRateLimited = &httpkit.Error{Status: http.StatusTooManyRequests, Code: string(agent.CodeRateLimited),
	Message: "Too many changes of push notification configs; wait a minute and try again.", RetryAfter: 60}

// allowPushWrite spends one push config write (a create or a delete) from
// the task's budget and the caller's (its IP, and its account if it has
// one): a write costs the node a follower's work and, at the next change,
// a POST.
func (s *Server) allowPushWrite(r *http.Request, who caller, t *task) bool {
	now := s.now()
	if !s.PushTaskWrites.Allow(string(t.id), now) || !s.PushCallerWrites.Allow("ip:"+httpkit.ClientKey(r), now) {
		return false
	}
	return who.owner == "" || s.PushCallerWrites.Allow("owner:"+who.owner, now)
}

var errNoPushConfig = &RPCError{Code: CodeInvalidParams, Message: "The task has no push notification config of that id: list them with ListTaskPushNotificationConfigs."}

func pushOut(c *call, pc pushConfig) any {
	if c.d == dialect03 {
		return pc.v03()
	}
	return pc.v1()
}

// addPush keeps pc on t (in place of a config of the same id) and makes
// sure t has its one push follower: a task is followed once, however many
// configs come and go, and each change is told to the configs it has then.
func (s *Server) addPush(t *task, pc pushConfig) *RPCError {
	t.mu.Lock()
	defer t.mu.Unlock()
	replaced := false
	for i, old := range t.pushes {
		if old.id == pc.id {
			t.pushes[i], replaced = pc, true
		}
	}
	if !replaced {
		if len(t.pushes) >= maxPushConfigs {
			return invalidParams(fmt.Sprintf("A task takes %d push notification configs at most: delete one first.", maxPushConfigs))
		}
		t.pushes = append(t.pushes, pc)
	}
	s.startPushLocked(t, t.markLocked())
	return nil
}

// startPushLocked starts t's push follower from `from` unless it has one
// or has ended; t.mu is held.
func (s *Server) startPushLocked(t *task, from mark) {
	if t.pushing || t.state.Terminal() {
		return
	}
	t.pushing = true
	go s.pushChanges(t, from)
}

func (t *task) pushList() []pushConfig {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]pushConfig(nil), t.pushes...)
}

func (t *task) deletePush(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, pc := range t.pushes {
		if pc.id == id {
			t.pushes = append(t.pushes[:i], t.pushes[i+1:]...)
			return true
		}
	}
	return false
}

// currentPush is the config id as t keeps it now; false once it was deleted.
func (t *task) currentPush(id string) (pushConfig, bool) {
	for _, pc := range t.pushList() {
		if pc.id == id {
			return pc, true
		}
	}
	return pushConfig{}, false
}

// pushChanges is t's one push follower: at each change of t's state it
// tells every config t has at that moment, until t ends or the node shuts
// down. Each notification is tried pushAttempts times, PushBackoff apart
// and doubling, while its config lasts; one that still fails is dropped
// (the task can be read with GetTask).
func (s *Server) pushChanges(t *task, from mark) {
	defer func() {
		t.mu.Lock()
		t.pushing = false
		t.mu.Unlock()
	}()
	t.follow(s.lifetime, from, func(e a2a.Event) error {
		if _, isStatus := e.(*a2a.TaskStatusUpdateEvent); !isStatus {
			return nil
		}
		var v1Body, v03Body []byte
		var wg sync.WaitGroup
		for _, pc := range t.pushList() {
			body := &v1Body
			if pc.d == dialect03 {
				body = &v03Body
			}
			if *body == nil {
				var payload any = v1.StreamResponse{Event: v1Value(e).(v1.Event)}
				if pc.d == dialect03 {
					payload = t.snapshot(nil)
				}
				b, err := json.Marshal(payload)
				if err != nil {
					return err
				}
				*body = b
			}
			wg.Go(func() { s.pushOne(t, pc.id, *body) })
		}
		wg.Wait()
		return nil
	})
}

// pushOne tells config id of t's change, retrying while the config lasts.
// A callback whose address the guard refuses is not retried.
func (s *Server) pushOne(t *task, id string, body []byte) {
	wait := s.PushBackoff
	for attempt := 1; ; attempt++ {
		pc, ok := t.currentPush(id)
		if !ok {
			return // deleted meanwhile
		}
		err := s.postPush(pc, body)
		switch {
		case err == nil:
			return
		case errors.Is(err, agent.ErrBlockedAddress):
			// The host is the caller's; the URL's path and the secrets are
			// not logged.
			s.Logger.Info("A2A push notification refused: the callback is not a public address", "task", string(pc.taskID), "host", pushHost(pc.url))
			return
		case attempt == pushAttempts:
			s.Logger.Info("A2A push notification dropped", "task", string(pc.taskID), "host", pushHost(pc.url), "attempts", pushAttempts)
			return
		}
		select {
		case <-time.After(wait):
		case <-s.lifetime.Done():
			return
		}
		wait *= 2
	}
}

// pushHost is the host of a callback URL, for the log.
func pushHost(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

func (s *Server) postPush(pc pushConfig, body []byte) error {
	ctx, cancel := context.WithTimeout(s.lifetime, pushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, pc.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if pc.token != "" {
		req.Header.Set("A2A-Notification-Token", pc.token)   // 1.0
		req.Header.Set("X-A2A-Notification-Token", pc.token) // 0.3
	}
	if pc.secret != "" { // the caller's own credentials for its own URL: sent there only, never logged
		scheme := "Bearer"
		if pc.scheme == "Basic" || pc.scheme == "basic" {
			scheme = "Basic"
		}
		req.Header.Set("Authorization", scheme+" "+pc.secret)
	}
	resp, err := s.PushClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("push notification answered %s", resp.Status)
	}
	return nil
}
