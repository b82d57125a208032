package a2a_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// A task made by an account signed in on the portal (its session cookie,
// from this node's own pages) is that account's: another account, an
// anonymous caller, and the same cookie on a request that does not come
// from this node's pages (a CSRF) get TaskNotFound, and the extended card
// is the account's only from its own pages (others get none).
func TestTasksBelongToTheSession(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("session-bot", "Session Bot")
	path := "/a2a/" + id
	alice := e.Visitor()
	alice.Signup("alice", "password-alice")
	own := []string{"Origin", e.TS.URL, "Sec-Fetch-Site", "same-origin"}

	send := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"mine"}]}}}`
	var sr v1.StreamResponse
	if r := rpc1(alice, path, send, own...); r.Error != nil || json.Unmarshal(r.Result, &sr) != nil {
		t.Fatalf("SendMessage = %s %+v", r.Result, r.Error)
	}
	task := sr.Event.(*v1.Task)
	get := `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"` + string(task.ID) + `"}}`
	if r := rpc1(alice, path, get, own...); r.Error != nil {
		t.Fatalf("the session's own GetTask: %+v", r.Error)
	}
	rest := path + "/tasks/" + string(task.ID)
	// Without an Origin, Sec-Fetch-Site same-origin says it is this node's page.
	WantStatus(t, alice.Do(http.MethodGet, rest, nil, "Sec-Fetch-Site", "same-origin"), http.StatusOK)

	// The cookie alone (no Origin, no Sec-Fetch-Site), or from another
	// site's page, is anonymous.
	wantV1Error(t, rpc1(alice, path, get), -32001, "TASK_NOT_FOUND", "2")
	WantStatus(t, alice.Do(http.MethodGet, rest, nil, "Origin", "http://evil.example"), http.StatusNotFound)
	WantStatus(t, alice.Do(http.MethodGet, rest, nil, "Sec-Fetch-Site", "same-site"), http.StatusNotFound)
	// Another account, and nobody.
	bob := e.Visitor()
	bob.Signup("bob", "password-bob")
	wantV1Error(t, rpc1(bob, path, get, own...), -32001, "TASK_NOT_FOUND", "2")
	wantV1Error(t, rpc1(e, path, get, own...), -32001, "TASK_NOT_FOUND", "2")

	list := func(c *Env) []*v1.Task {
		var out v1.ListTasksResponse
		r := rpc1(c, path, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{}}`, own...)
		if r.Error != nil || json.Unmarshal(r.Result, &out) != nil {
			t.Fatalf("ListTasks = %s %+v", r.Result, r.Error)
		}
		return out.Tasks
	}
	if l := list(alice); len(l) != 1 || l[0].ID != task.ID {
		t.Errorf("alice lists %+v", l)
	}
	if l := list(bob); len(l) != 0 {
		t.Errorf("bob lists %+v", l)
	}

	// The extended card: the account's from its pages; a cross-site
	// request is anonymous, and anonymous callers get none.
	resp := alice.Do(http.MethodGet, path+"/extendedAgentCard", nil, own...)
	WantStatus(t, resp, http.StatusOK)
	if c := string(Decode[json.RawMessage](t, resp)); !strings.Contains(c, `"my_tasks"`) {
		t.Errorf("the session's extended card has no my_tasks skill: %s", c)
	}
	WantStatus(t, alice.Do(http.MethodGet, path+"/extendedAgentCard", nil, "Origin", "http://evil.example"), http.StatusUnauthorized)
}
