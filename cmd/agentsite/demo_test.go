package main

import (
	"bytes"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log destination the node's goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDemoAgentsKeepOffUsersNames: a user's agent named like a demo agent
// survives a restart with --demo-agents; the demo agent is skipped with a
// warning and the other demo agents are published.
func TestDemoAgentsKeepOffUsersNames(t *testing.T) {
	dir := t.TempDir()
	m := startNode(t, dir, "--demo-agents=false")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, vals url.Values) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, m.HTTPURL()+path, strings.NewReader(vals.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", m.HTTPURL())
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST %s: %d, want 303", path, resp.StatusCode)
		}
		return resp
	}
	post("/signup", url.Values{"handle": {"bob"}, "password": {"password-bob"}, "password_confirm": {"password-bob"}})
	resp := post("/register", url.Values{"name": {"echo"}, "display_name": {"Bob's Echo"}, "description": {"Mine."},
		"backend_kind": {"builtin"}, "backend_builtin": {"calculator"}})
	id := strings.TrimPrefix(resp.Header.Get("Location"), "/agents/")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	var log lockedBuffer
	m2 := startNodeLogging(t, dir, &log)
	defer m2.Close()
	var got struct {
		Owner       string `json:"owner"`
		DisplayName string `json:"display_name"`
	}
	getJSON(t, m2.HTTPURL()+"/api/v1/agents/"+id, &got)
	if got.Owner != "bob" || got.DisplayName != "Bob's Echo" {
		t.Errorf("bob's echo after a restart with demo agents = %+v", got)
	}
	var agents agentList
	getJSON(t, m2.HTTPURL()+"/api/v1/agents", &agents)
	var names []string
	for _, a := range agents.Agents {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "calculator,echo" && strings.Join(names, ",") != "echo,calculator" {
		t.Errorf("agents = %v, want bob's echo and the demo calculator", names)
	}
	if l := log.String(); !strings.Contains(l, "demo agent skipped") || !strings.Contains(l, "name=echo") {
		t.Errorf("no warning about the skipped demo agent in the log:\n%s", l)
	}
}
