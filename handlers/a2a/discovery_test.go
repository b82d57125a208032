package a2a_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// A client given only an agent's url finds its card where the A2A
// specification says to look, <url>/.well-known/agent-card.json: the
// same signed card as at <url>/agent-card.json, with an ETag,
// Last-Modified and Cache-Control, readable by any page. a2a-go's own
// resolver (the official Go client's) finds it from the url alone, and
// the concierge's card is under its url (/a2a) too.
func TestCardUnderTheAgentURL(t *testing.T) {
	e, _ := newEnv(t, nil)
	e.SignCards()
	id := e.SeedEcho("found-bot", "Found Bot")
	url := e.TS.URL + "/a2a/" + id

	read := func(path string, headers ...string) (*http.Response, string) {
		t.Helper()
		resp := e.Do(http.MethodGet, path, nil, headers...)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, known := read("/a2a/" + id + "/.well-known/agent-card.json")
	WantStatus(t, resp, http.StatusOK)
	_, old := read("/a2a/" + id + "/agent-card.json")
	if known != old || !strings.Contains(known, `"signatures"`) {
		t.Errorf("the well-known card differs from the card, or is unsigned:\n%s\n%s", known, old)
	}
	lm := resp.Header.Get("Last-Modified")
	etag := resp.Header.Get("ETag")
	if etag == "" || lm == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age") ||
		resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("card headers = %v", resp.Header)
	}
	if r, _ := read("/a2a/"+id+"/.well-known/agent-card.json", "If-None-Match", etag); r.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", r.StatusCode)
	}
	if r, _ := read("/a2a/"+id+"/.well-known/agent-card.json", "If-Modified-Since", lm); r.StatusCode != http.StatusNotModified {
		t.Errorf("If-Modified-Since: %d, want 304", r.StatusCode)
	}
	if r, _ := read("/a2a/"+id+"/.well-known/agent-card.json", "If-Modified-Since", "Mon, 02 Jan 2006 15:04:05 GMT"); r.StatusCode != http.StatusOK {
		t.Errorf("If-Modified-Since long ago: %d, want 200", r.StatusCode)
	}

	card, err := agentcard.DefaultResolver.Resolve(context.Background(), url)
	if err != nil || card.Name != "Found Bot" || len(card.SupportedInterfaces) == 0 || card.SupportedInterfaces[0].URL != url {
		t.Fatalf("a2a-go's resolver, given %s: %+v, %v", url, card, err)
	}

	// The concierge's card under its url, and the node's with Last-Modified.
	resp, body := read("/a2a/.well-known/agent-card.json")
	WantStatus(t, resp, http.StatusOK)
	if !strings.Contains(body, `"find_agents"`) {
		t.Errorf("/a2a/.well-known/agent-card.json is not the concierge's card: %s", body)
	}
	if r, _ := read("/.well-known/agent-card.json"); r.Header.Get("Last-Modified") == "" {
		t.Errorf("the node card has no Last-Modified: %v", r.Header)
	}
}

// GetExtendedAgentCard answers authenticated callers only (A2A 1.0.1
// §13.3): anonymous callers get UNAUTHENTICATED in 1.0 (-31401, 401 over
// HTTP+JSON) and AgentSite's "unauthorized" in 0.3; the operator token
// gets the extended card.
func TestExtendedCardNeedsCredentials(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("ext-bot", "Ext Bot")
	path := "/a2a/" + id
	const ext = `{"jsonrpc":"2.0","id":5,"method":"GetExtendedAgentCard","params":{}}`

	wantV1Error(t, rpc1(e, path, ext), -31401, "UNAUTHENTICATED", "5")
	anon := e.Do(http.MethodGet, path+"/extendedAgentCard", nil, "A2A-Version", "1.0")
	WantStatus(t, anon, http.StatusUnauthorized)
	if !strings.HasPrefix(anon.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("a 401 without WWW-Authenticate: %v", anon.Header)
	}
	wantError(t, call(e, path, "agent/getAuthenticatedExtendedCard", nil), -32000, "unauthorized")
	// The concierge's too.
	wantV1Error(t, rpc1(e, "/a2a", ext), -31401, "UNAUTHENTICATED", "5")

	bearer := []string{"Authorization", "Bearer " + OperatorToken}
	r := rpc1(e, path, ext, bearer...)
	if r.Error != nil || !strings.Contains(string(r.Result), `"my_tasks"`) || !strings.Contains(string(r.Result), `"Ext Bot"`) {
		t.Errorf("with the operator token: %s %+v", r.Result, r.Error)
	}
	resp := e.Do(http.MethodGet, path+"/extendedAgentCard", nil, append([]string{"A2A-Version", "1.0"}, bearer...)...)
	WantStatus(t, resp, http.StatusOK)
}

// A 0.3 method sent under A2A-Version 1.0 is not answered with 0.3's
// semantics: 1.0 has no such method (-32601), and the error names the
// versions served and the method's 1.0 name. An unknown version is
// still -32009.
func TestV03MethodUnderVersion1(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("ver-bot", "Ver Bot")
	path := "/a2a/" + id
	send := `{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	r := rpc1(e, path, send)
	wantV1Error(t, r, -32601, "METHOD_NOT_FOUND", "3")
	for _, want := range []string{"1.0", "0.3", "SendMessage"} {
		if !strings.Contains(r.Error.Message, want) {
			t.Errorf("the error does not name %q: %s", want, r.Error.Message)
		}
	}
	stream := strings.Replace(send, "message/send", "message/stream", 1)
	wantV1Error(t, rpc1(e, path, stream), -32601, "METHOD_NOT_FOUND", "3")
	// Under 0.3 (or no header) the same request is served.
	resp := e.Do(http.MethodPost, path, send, "A2A-Version", "0.3")
	WantStatus(t, resp, http.StatusOK)
	if b, _ := io.ReadAll(resp.Body); strings.Contains(string(b), `"error"`) {
		t.Errorf("message/send under A2A-Version 0.3: %s", b)
	}
	if r := rpc1(e, path, send, "A2A-Version", "2.0"); r.Error == nil || r.Error.Code != -32009 {
		t.Errorf("A2A-Version 2.0: %s %+v, want -32009", r.Result, r.Error)
	}
}
