package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// TestAPIAnonymousBudgetPerSession: anonymous turns are counted by the
// visitor's portal session first, so two people behind one address each
// get chat.DefaultLiveMaxPerOwner replies on their way (before, the
// address had that many for everyone behind it); the address keeps a
// ceiling of its own (AnonTurnsPerAddress) that a third session, or a
// client without one, does not pass.
func TestAPIAnonymousBudgetPerSession(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.AnonTurnsPerAddress = 8 })
	UseRuntime(e)
	id := e.SeedEcho("echo", "Echo")
	slow := NewSlowAnswerer()
	e.Server.Chat.Local = slow
	type answer struct {
		who    string
		status int
		body   httpkit.ErrorBody
		err    error
	}
	answers := make(chan answer, 32)
	post := func(who string, c *http.Client, text string) {
		go func() {
			a := answer{who: who}
			defer func() { answers <- a }()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.TS.URL+"/api/v1/agents/"+id+"/messages",
				strings.NewReader(fmt.Sprintf(`{"text":%q}`, text)))
			if err != nil {
				a.err = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				a.err = err
				return
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			a.status, a.err = resp.StatusCode, err
			if resp.StatusCode != http.StatusOK {
				a.err = json.Unmarshal(raw, &a.body)
			}
		}()
	}
	deadline := time.After(20 * time.Second)
	next := func(what string) answer {
		t.Helper()
		select {
		case a := <-answers:
			if a.err != nil {
				t.Fatalf("%s: %v", what, a.err)
			}
			return a
		case <-deadline:
			t.Fatalf("%s: no answer in time", what)
		}
		return answer{}
	}
	wantRefused := func(what, who string, a answer) {
		t.Helper()
		if a.who != who || a.status != http.StatusTooManyRequests || a.body.Error.Code != string(agent.CodeRateLimited) {
			t.Fatalf("%s: %s got %d %+v, want %s refused with 429 rate_limited", what, a.who, a.status, a.body, who)
		}
	}
	held := func(n int) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); e.Server.API.Anon.Held("127.0.0.1") != n; {
			if time.Now().After(end) {
				t.Fatalf("the address holds %d turns, want %d", e.Server.API.Anon.Held("127.0.0.1"), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	session := func() *http.Client {
		v := e.Visitor()
		v.Page("/chat/"+id, http.StatusOK) // the node gives it a session
		return v.Client
	}
	alice, bob, carol := session(), session(), session()

	const perSession = 4 // chat.DefaultLiveMaxPerOwner
	for i := range perSession + 2 {
		post("alice", alice, fmt.Sprintf("alice %d", i))
	}
	for i := range 2 {
		wantRefused(fmt.Sprintf("alice's turn over her bound (%d)", i), "alice", next("alice's refusals"))
	}
	held(perSession)
	// Bob, behind the same address, has a budget of his own.
	for i := range perSession {
		post("bob", bob, fmt.Sprintf("bob %d", i))
	}
	held(2 * perSession)
	select {
	case a := <-answers:
		t.Fatalf("a turn of bob's own budget was answered while the replies wait: %+v", a)
	default:
	}
	// The address's ceiling (8) is reached: a third session, and a
	// client without a session, are refused.
	post("carol", carol, "carol")
	wantRefused("a third session over the address's ceiling", "carol", next("carol"))
	post("cookieless", e.Visitor().Client, "no session")
	wantRefused("a client without a session over the address's ceiling", "cookieless", next("cookieless"))

	for range 2 * perSession {
		slow.Release()
	}
	for i := range 2 * perSession {
		if a := next(fmt.Sprintf("reply %d", i)); a.status != http.StatusOK {
			t.Fatalf("held turn of %s: %d %+v, want its reply", a.who, a.status, a.body)
		}
	}
	held(0)
}
