package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"
)

// Limits of push notifications. The callback URL is the caller's; it is
// called only through the guarded client (PushClient), whose SSRF guard
// refuses non-public addresses at connect time, redirects included.
const (
	maxPushConfigs  = 4    // per task
	maxPushURLBytes = 2048 // a callback URL
	maxPushSecret   = 1024 // a token or credentials
	pushAttempts    = 3    // tries of one notification
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
	case in.URL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return pushConfig{}, invalidParams("The push notification url must be an absolute http(s) URL of a public host.")
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
func (s *Server) pushRPC(w http.ResponseWriter, c *call, who caller, scope string, req Request) {
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

var errNoPushConfig = &RPCError{Code: CodeInvalidParams, Message: "The task has no push notification config of that id: list them with ListTaskPushNotificationConfigs."}

func pushOut(c *call, pc pushConfig) any {
	if c.d == dialect03 {
		return pc.v03()
	}
	return pc.v1()
}

// addPush keeps pc on t and starts telling of t's changes.
func (s *Server) addPush(t *task, pc pushConfig) *RPCError {
	t.mu.Lock()
	for i, old := range t.pushes {
		if old.id == pc.id { // replaced
			t.pushes[i] = pc
			t.mu.Unlock()
			return nil
		}
	}
	if len(t.pushes) >= maxPushConfigs {
		t.mu.Unlock()
		return invalidParams(fmt.Sprintf("A task takes %d push notification configs at most: delete one first.", maxPushConfigs))
	}
	t.pushes = append(t.pushes, pc)
	from := mark{sent: len(t.textLocked()), state: t.state}
	t.mu.Unlock()
	if !from.state.Terminal() {
		go s.pushChanges(t, pc, from)
	}
	return nil
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

// current is pc as t keeps it now; false once it was deleted.
func (t *task) currentPush(id string) (pushConfig, bool) {
	for _, pc := range t.pushList() {
		if pc.id == id {
			return pc, true
		}
	}
	return pushConfig{}, false
}

// pushChanges tells pc's URL of each change of t's state, until t ends,
// the config is deleted, or the node shuts down. Each notification is
// tried pushAttempts times, PushBackoff apart and doubling; one that
// still fails is dropped (the task can be read with GetTask).
func (s *Server) pushChanges(t *task, pc pushConfig, from mark) {
	t.follow(s.lifetime, from, func(e a2a.Event) error {
		if _, isStatus := e.(*a2a.TaskStatusUpdateEvent); !isStatus {
			return nil
		}
		cur, ok := t.currentPush(pc.id)
		if !ok {
			return errNoPushConfigErr
		}
		var payload any = v1.StreamResponse{Event: v1Value(e).(v1.Event)}
		if cur.d == dialect03 {
			payload = t.snapshot(nil)
		}
		body, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		s.pushOne(cur, body)
		return nil
	})
}

var errNoPushConfigErr = fmt.Errorf("a2a: push config deleted")

func (s *Server) pushOne(pc pushConfig, body []byte) {
	wait := s.PushBackoff
	for attempt := 1; attempt <= pushAttempts; attempt++ {
		if s.postPush(pc, body) == nil {
			return
		}
		if attempt == pushAttempts {
			break
		}
		select {
		case <-time.After(wait):
		case <-s.lifetime.Done():
			return
		}
		wait *= 2
	}
	s.Logger.Info("A2A push notification dropped", "task", string(pc.taskID), "attempts", pushAttempts)
}

func (s *Server) postPush(pc pushConfig, body []byte) error {
	ctx, cancel := context.WithTimeout(s.lifetime, 10*time.Second)
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
	if pc.secret != "" {
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
