package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

const replicaToken = "replica-operator-token-0123456789"

// replica is one `agentsite serve` process of a portal.
type replica struct {
	url string
	log *lockedBuffer
}

// startReplica runs the binary as a portal replica on the shared
// database dbURL, and waits until it is ready.
func startReplica(t *testing.T, bin, dbURL string, port int, extra ...string) *replica {
	t.Helper()
	r := &replica{url: fmt.Sprintf("http://127.0.0.1:%d", port), log: &lockedBuffer{}}
	args := append([]string{"serve",
		"--data-dir", t.TempDir(),
		"--database-url", dbURL,
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", port),
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--operator-token", replicaToken,
		"--secure-cookies=false",
		"--demo-agents=false",
		"--heartbeat-interval", "500ms",
	}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(r.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		select {
		case err := <-done:
			t.Fatalf("replica exited: %v\n%s", err, r.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica on %d not ready in time\n%s", port, r.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// call sends a JSON request with the operator token (when op) and decodes
// a 2xx answer into out; it returns the status.
func call(t *testing.T, c *http.Client, method, u string, op bool, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, u, rd)
	req.Header.Set("Content-Type", "application/json")
	if op {
		req.Header.Set("Authorization", "Bearer "+replicaToken)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, u, err, raw)
		}
	}
	return resp.StatusCode
}

// TestReplicasOnOnePostgres runs two real `agentsite serve` processes,
// each its own node, on one Postgres database, as a portal's replicas
// behind a load balancer: an account made on A logs in on B, a chat
// started on A continues on B, and concurrent writes through both keep
// the seq rule (no 5xx, one highest version everywhere).
func TestReplicasOnOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts two node processes")
	}
	bin := filepath.Join(t.TempDir(), "agentsite")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dbURL := pgtest.NewDatabase(t)
	base := demoFreePorts(t, 2)
	a := startReplica(t, bin, dbURL, base)
	var info nodeInfo
	getJSON(t, a.url+"/api/v1/node", &info)
	b := startReplica(t, bin, dbURL, base+1, "--bootstrap", info.Addrs[0])

	// One browser: the cookie jar sends the session to both, as to one
	// portal's host behind a load balancer.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"handle": {"alice"}, "password": {"correct-horse-9"}, "password_confirm": {"correct-horse-9"}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a.url+"/signup", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", a.url) // a browser's form says whence
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign up on A: %d", resp.StatusCode)
	}
	resp, err = browser.Get(b.url + "/account")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "alice") {
		t.Fatalf("the session made on A is not logged in on B: %d", resp.StatusCode)
	}

	// A chat started on A continues on B.
	c := &http.Client{Timeout: 30 * time.Second}
	var echo apiwire.Agent
	in := apiwire.AgentInput{Name: "echo-bot", DisplayName: "Echo", Description: "Echoes.", Backend: apiBuiltin("echo")}
	if st := call(t, c, "POST", a.url+"/api/v1/agents", true, in, &echo); st != http.StatusCreated {
		t.Fatalf("register on A: %d", st)
	}
	var first, second struct {
		ConversationID string `json:"conversation_id"`
		Reply          string `json:"reply"`
	}
	if st := call(t, c, "POST", a.url+"/api/v1/agents/"+echo.ID+"/messages", true, map[string]string{"text": "first"}, &first); st != http.StatusOK {
		t.Fatalf("turn on A: %d", st)
	}
	if st := call(t, c, "POST", b.url+"/api/v1/agents/"+echo.ID+"/messages", true,
		map[string]string{"text": "second", "conversation_id": first.ConversationID}, &second); st != http.StatusOK {
		t.Fatalf("turn on B in A's conversation: %d\n%s", st, b.log.String())
	}
	if second.ConversationID != first.ConversationID || second.Reply != "second" {
		t.Fatalf("B started conversation %s instead of continuing %s", second.ConversationID, first.ConversationID)
	}
	var conv struct {
		Messages []struct {
			Text string `json:"text"`
		} `json:"messages"`
	}
	if st := call(t, c, "GET", a.url+"/api/v1/conversations/"+first.ConversationID, true, nil, &conv); st != http.StatusOK || len(conv.Messages) != 4 {
		t.Fatalf("conversation on A after B's turn: %d, %d messages, want 4", st, len(conv.Messages))
	}

	// Concurrent writes through both replicas.
	var shared apiwire.Agent
	sharedIn := apiwire.AgentInput{Name: "shared-bot", DisplayName: "Shared", Description: "v0", Backend: apiBuiltin("echo")}
	if st := call(t, c, "POST", a.url+"/api/v1/agents", true, sharedIn, &shared); st != http.StatusCreated {
		t.Fatalf("register shared-bot: %d", st)
	}
	var mu sync.Mutex
	statuses := map[string][]int{}
	twins := map[string]string{}
	var wg sync.WaitGroup
	for i := range 8 {
		for _, r := range []struct {
			name string
			url  string
		}{{"A", a.url}, {"B", b.url}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				upd := sharedIn
				upd.Description = fmt.Sprintf("v%d via %s", i+1, r.name)
				st := call(t, c, "PUT", r.url+"/api/v1/agents/"+shared.ID, true, upd, nil)
				var twin apiwire.Agent
				tst := call(t, c, "POST", r.url+"/api/v1/agents", true,
					apiwire.AgentInput{Name: fmt.Sprintf("twin-%d", i), DisplayName: "Twin", Description: "d", Backend: apiBuiltin("echo")}, &twin)
				mu.Lock()
				defer mu.Unlock()
				statuses[r.name+" update"] = append(statuses[r.name+" update"], st)
				statuses[r.name+" create"] = append(statuses[r.name+" create"], tst)
				if tst == http.StatusCreated {
					if prev, ok := twins[twin.Name]; ok && prev == twin.ID {
						t.Errorf("twin %s registered twice under one id", twin.Name)
					}
					twins[twin.Name] = twin.ID
				}
			}()
		}
	}
	wg.Wait()
	for _, st := range statuses["A update"] {
		if st != http.StatusOK {
			t.Errorf("update through A (its host): %d", st)
		}
	}
	for _, st := range statuses["B update"] {
		if st != http.StatusConflict {
			t.Errorf("update through B (not its host): %d, want 409", st)
		}
	}
	for k, sts := range statuses {
		if strings.HasSuffix(k, "create") {
			for _, st := range sts {
				if st != http.StatusCreated {
					t.Errorf("%s: %d, want 201 (each replica's own agent)", k, st)
				}
			}
		}
	}
	// Both replicas settle on the same, highest version (their read
	// caches may lag a second).
	var onA, onB apiwire.Agent
	deadline := time.Now().Add(15 * time.Second)
	for {
		call(t, c, "GET", a.url+"/api/v1/agents/"+shared.ID, false, nil, &onA)
		call(t, c, "GET", b.url+"/api/v1/agents/"+shared.ID, false, nil, &onB)
		if onA.Seq == onB.Seq && onA.Description == onB.Description {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas disagree: A %d %q, B %d %q", onA.Seq, onA.Description, onB.Seq, onB.Description)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if onA.Seq <= shared.Seq || !strings.HasSuffix(onA.Description, "via A") {
		t.Errorf("final version = %d %q, want above %d and from A", onA.Seq, onA.Description, shared.Seq)
	}
	// Each replica's search index follows the other's writes: B's search
	// finds the description A wrote last, and the index answered it.
	for name, r := range map[string]*replica{"A": a, "B": b} {
		var ready struct {
			Checks map[string]string `json:"checks"`
		}
		getJSON(t, r.url+"/readyz", &ready)
		if ready.Checks["search_index"] != "ok" {
			t.Errorf("replica %s /readyz search_index = %q, want ok", name, ready.Checks["search_index"])
		}
	}
	word := strings.Fields(onA.Description)[0] // "v8" or the like: only the last version has it
	deadline = time.Now().Add(15 * time.Second)
	for {
		var found apiwire.AgentList
		call(t, c, "GET", b.url+"/api/v1/agents?q="+url.QueryEscape(word+" via"), false, nil, &found)
		if len(found.Agents) == 1 && found.Agents[0].ID == shared.ID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search %q on B: %d agents, want shared-bot", word, len(found.Agents))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for name, r := range map[string]*replica{"A": a, "B": b} {
		if strings.Contains(r.log.String(), "level=ERROR") {
			t.Errorf("replica %s logged errors:\n%s", name, r.log.String())
		}
	}
}

func apiBuiltin(name string) agent.Backend {
	return agent.Backend{Kind: agent.BackendBuiltin, Builtin: name}
}
