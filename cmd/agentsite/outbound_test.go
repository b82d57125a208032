package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
)

// hookListener is a push receiver on loopback that counts what reaches it.
func hookListener(t *testing.T) (url string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", hits
}

// a2aCall posts one A2A 1.0 JSON-RPC request to n's agent, anonymously,
// and returns the JSON-RPC error code (0: none).
func a2aCall(t *testing.T, n *clusterNode, agentID, method, params string) (code int, result json.RawMessage) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, n.m.HTTPURL()+"/a2a/"+agentID, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, raw)
	}
	if r.Error != nil {
		return r.Error.Code, nil
	}
	return 0, r.Result
}

// An anonymous caller cannot make a node that allows private backends
// POST to loopback: --allow-private-endpoints is for backends, and push
// callbacks never reach a private address, in SendMessage nor through
// CreateTaskPushNotificationConfig.
func TestPushNeverReachesLoopbackWithPrivateBackends(t *testing.T) {
	n := startClusterNode(t, nodeOpts{extra: []string{"--allow-private-endpoints"}})
	echo := n.register("echo-push", "push")
	hook, hits := hookListener(t)

	send := `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]},` +
		`"configuration":{"taskPushNotificationConfig":{"url":"` + hook + `","authentication":{"scheme":"Bearer","credentials":"x"}}}}`
	if code, _ := a2aCall(t, n, echo.ID, "SendMessage", send); code != -32602 {
		t.Fatalf("SendMessage with a loopback callback: JSON-RPC error %d, want -32602 (refused)", code)
	}
	code, result := a2aCall(t, n, echo.ID, "SendMessage", `{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hello"}]}}`)
	if code != 0 {
		t.Fatalf("SendMessage: error %d", code)
	}
	var sr struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if err := json.Unmarshal(result, &sr); err != nil || sr.Task.ID == "" {
		t.Fatalf("SendMessage result %s: %v", result, err)
	}
	for _, u := range []string{hook, strings.Replace(hook, "127.0.0.1", "[::ffff:127.0.0.1]", 1), strings.Replace(hook, "127.0.0.1", "localhost", 1)} {
		params := `{"taskId":"` + sr.Task.ID + `","url":"` + u + `"}`
		if code, _ := a2aCall(t, n, echo.ID, "CreateTaskPushNotificationConfig", params); code != -32602 {
			t.Errorf("CreateTaskPushNotificationConfig %s: error %d, want -32602 (refused)", u, code)
		}
	}
	if h := hits.Load(); h != 0 {
		t.Fatalf("the loopback receiver got %d requests", h)
	}
}

// --allow-endpoint opens exactly one endpoint of the operator's network to
// backends: a local model there registers and answers; the same host on
// another port, and a push callback to the allowed endpoint itself, are
// refused.
func TestAllowEndpointOpensOneBackend(t *testing.T) {
	model := &fakellm.Server{Model: "local", Script: func(fakellm.Request) fakellm.Reply { return fakellm.Reply{Text: "from the local model"} }}
	allowedURL := serveModel(t, model)
	otherURL := serveModel(t, model)
	allowed := strings.TrimSuffix(strings.TrimPrefix(allowedURL, "http://"), "/v1")
	if _, _, err := net.SplitHostPort(allowed); err != nil {
		t.Fatal(err)
	}
	n := startClusterNode(t, nodeOpts{extra: []string{"--allow-endpoint", allowed}})

	llm := func(url string) map[string]any { return map[string]any{"kind": "llm", "url": url, "model": "local"} }
	local := n.registerBackend("local-model", llm(allowedURL), "local")
	got, err := sendMessage(context.Background(), n.m.HTTPURL(), local.ID, "hi")
	if err != nil || got.Reply != "from the local model" {
		t.Fatalf("turn with the allowed local model: %+v, %v", got, err)
	}
	code, body := n.api("POST", "/api/v1/agents", map[string]any{
		"name": "other-model", "display_name": "Other", "description": "Agent other.", "tags": []string{"local"}, "backend": llm(otherURL),
	})
	if code != http.StatusUnprocessableEntity && code != http.StatusBadRequest {
		t.Fatalf("a backend on another loopback port: %d %s, want a refusal", code, body)
	}
	send := `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]},` +
		`"configuration":{"taskPushNotificationConfig":{"url":"http://` + allowed + `/hook"}}}`
	if code, _ := a2aCall(t, n, local.ID, "SendMessage", send); code != -32602 {
		t.Fatalf("a push callback to the allowed backend endpoint: error %d, want -32602 (refused)", code)
	}
	if err := (&Config{AllowEndpoints: []string{"169.254.169.254:80"}, DataDir: "x", RecordTTL: 3600e9}).validateShared(); len(err) == 0 {
		t.Error("--allow-endpoint opened the cloud metadata address")
	}
}

// acceptCounter is a TCP listener on loopback that counts the connections
// that reach it.
func acceptCounter(t *testing.T) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), accepted
}

// Every client the node dials out with goes through the guard of its
// purpose. On a node that allows private backends, a loopback listener is
// never reached by a domain proof, a push notification or an import (of a
// catalogue or of a card), and a backend never reaches the cloud metadata
// address nor loopback through NAT64 or 6to4.
func TestOutboundClientsUseTheGuard(t *testing.T) {
	addr, accepted := acceptCounter(t)
	_, port, _ := net.SplitHostPort(addr)
	n := startClusterNode(t, nodeOpts{extra: []string{"--allow-private-endpoints"}})
	ctx := t.Context()

	// Loopback as itself and in the IPv6 forms that carry it, and the
	// cloud metadata address.
	forms := []string{addr, "[::ffff:127.0.0.1]:" + port, "[64:ff9b::7f00:1]:" + port, "[2002:7f00:1::1]:" + port, "169.254.169.254:80"}
	for _, hostport := range forms {
		if _, err := n.m.app.verify.Claims.Fetch(ctx, "https://"+hostport+"/.well-known/agentsite.json", 1024); !errors.Is(err, agent.ErrBlockedAddress) {
			t.Errorf("domain proof from %s: %v, want ErrBlockedAddress", hostport, err)
		}
		if resp, err := n.m.Server.A2A.PushClient.Post("http://"+hostport+"/hook", "application/json", strings.NewReader("{}")); err == nil {
			resp.Body.Close()
			t.Errorf("the push client reached %s", hostport)
		} else if !errors.Is(err, agent.ErrBlockedAddress) {
			t.Errorf("push to %s: %v, want ErrBlockedAddress", hostport, err)
		}
	}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[64:ff9b::7f00:1]:" + port + "/", "http://[2002:7f00:1::1]:" + port + "/", "http://[fd00:ec2::254]/"} {
		if _, err := n.m.Runtime.FetchA2ACard(ctx, u); !errors.Is(err, agent.ErrBlockedAddress) {
			t.Errorf("backend card fetch %s: %v, want ErrBlockedAddress", u, err)
		}
	}

	dir := t.TempDir()
	for _, hostport := range forms {
		if _, _, err := runCmd(t, "import", "--format", "ai-catalog", "--data-dir", dir, "--allow-private-endpoints", "http://"+hostport+"/.well-known/ai-catalog.json"); !errors.Is(err, agent.ErrBlockedAddress) {
			t.Errorf("an import of a catalogue at %s: %v, want ErrBlockedAddress", hostport, err)
		}
	}
	cards := filepath.Join(t.TempDir(), "cards.txt")
	if err := os.WriteFile(cards, []byte("http://"+addr+"/agent-card.json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCmd(t, "import", "--format", "a2a-cards", "--data-dir", dir, "--allow-private-endpoints", cards)
	wantRefused(t, err, 1, 1)
	if a := accepted.Load(); a != 0 {
		t.Fatalf("the loopback listener accepted %d connections", a)
	}
}
