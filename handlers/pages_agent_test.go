package handlers

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/store"
)

func TestAgentPage(t *testing.T) {
	e := newTestServer(t)
	in := weatherInput("weather-bot")
	in.Description = "Line one\n<script>alert(1)</script>\n  indented & <b>bold</b>"
	in.Skills[0].Examples = []string{"<img src=x onerror=alert(1)>"}
	l := e.seedAgent("alice", in)
	id := l.Record.ID

	resp := e.do(http.MethodGet, "/agents/"+id, nil)
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "<script>alert(1)</script>") || strings.Contains(string(body), "<img src=x") || strings.Contains(string(body), "<b>bold</b>") {
		t.Fatal("user text is rendered as HTML")
	}
	doc := e.page("/agents/"+id, http.StatusOK)
	desc := mustTestid(t, doc, "agent-description")
	if got := desc.Text(); got != in.Description {
		t.Errorf("description text = %q, want %q (escaped, newlines kept)", got, in.Description)
	}
	if !desc.HasClass("prewrap") {
		t.Error("description does not keep newlines (class prewrap)")
	}
	fields := map[string]string{
		"agent-display-name": "Weather Bot",
		"agent-name":         "weather-bot",
		"agent-id":           id,
		"agent-version":      "1.2.0",
		"agent-owner":        "@alice",
		"agent-publisher":    e.node.PeerID(),
		"agent-host":         e.node.PeerID(),
		"agent-seq":          "",
		"agent-local":        "Hosted here",
	}
	for tid, want := range fields {
		got := text(mustTestid(t, doc, tid))
		if want != "" && got != want {
			t.Errorf("%s = %q, want %q", tid, got, want)
		}
	}
	if got := mustTestid(t, doc, "agent-status").AttrOr("data-status", ""); got != "online" {
		t.Errorf("status = %q", got)
	}
	if got := mustTestid(t, doc, "agent-tags").Find(`[data-testid="tag"]`).Length(); got != 2 {
		t.Errorf("tags = %d, want 2", got)
	}
	skill := mustTestid(t, doc, "skill")
	if skill.AttrOr("data-skill-id", "") != "forecast" || text(skill.Find(`[data-testid="skill-example"]`)) != in.Skills[0].Examples[0] {
		t.Errorf("skill = %q", text(skill))
	}
	if ep := text(mustTestid(t, doc, "endpoint")); !strings.Contains(ep, agent.MCPProtocol) {
		t.Errorf("endpoint = %q", ep)
	}
	for _, tid := range []string{"agent-issued", "agent-expires", "agent-last-seen"} {
		if _, ok := mustTestid(t, doc, tid).Find("time").Attr("datetime"); !ok {
			t.Errorf("%s has no <time datetime>", tid)
		}
	}

	// Manage buttons: only for the owner.
	if testid(doc, "edit-agent").Length() != 0 || testid(doc, "delete-agent").Length() != 0 {
		t.Error("a visitor sees edit/delete")
	}
	e.signup("bob", "password-bob")
	if doc := e.page("/agents/"+id, http.StatusOK); testid(doc, "edit-agent").Length() != 0 {
		t.Error("another user sees edit")
	}
	owner := e.visitor()
	owner.login("alice", "password-alice")
	doc = owner.page("/agents/"+id, http.StatusOK)
	if href := mustTestid(t, doc, "edit-agent").AttrOr("href", ""); href != "/account/agents/"+id+"/edit" {
		t.Errorf("edit href = %q", href)
	}
	if f := mustTestid(t, doc, "delete-agent").Closest("form"); f.AttrOr("action", "") != "/account/agents/"+id+"/delete" || f.AttrOr("method", "") != "post" {
		t.Error("delete is not a POST form")
	}
}

func TestAgentPageMissing(t *testing.T) {
	e := newTestServer(t)
	l := e.seedAgent("", simpleInput("doomed", "Doomed"))
	if err := e.s.Registry.Delete(t.Context(), registry.Operator, l.Record.ID); err != nil {
		t.Fatal(err)
	}
	unknown := strings.Repeat("a", agent.IDLen)
	tests := []struct {
		name, path string
		status     int
	}{
		{"deleted", "/agents/" + l.Record.ID, http.StatusGone},
		{"unknown id", "/agents/" + unknown, http.StatusNotFound},
		{"malformed id", "/agents/..%2f..%2fetc", http.StatusNotFound},
		{"upper-case id", "/agents/" + strings.ToUpper(unknown), http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := e.page(tt.path, tt.status)
			mustTestid(t, doc, "error-page")
		})
	}
	doc := e.page("/agents/"+l.Record.ID, http.StatusGone)
	if got := text(mustTestid(t, doc, "error-message")); !strings.Contains(got, "deleted") {
		t.Errorf("410 message = %q", got)
	}
}

func TestNodesPage(t *testing.T) {
	e := newTestServer(t)
	doc := e.page("/nodes", http.StatusOK)
	if got := text(mustTestid(t, doc, "node-peer-id")); got != e.node.PeerID() {
		t.Errorf("peer id = %q", got)
	}
	addrs := testid(doc, "node-addr")
	if addrs.Length() == 0 || addrs.Length() != len(e.node.Addrs()) {
		t.Fatalf("%d addrs shown, node has %d", addrs.Length(), len(e.node.Addrs()))
	}
	if a := text(addrs.First()); !strings.HasSuffix(a, "/p2p/"+e.node.PeerID()) {
		t.Errorf("addr %q is not a full multiaddr", a)
	}
	if copy := addrs.First().Parent().Find(`[data-testid="copy"]`); copy.AttrOr("data-copy", "") != text(addrs.First()) {
		t.Error("address has no copy button with its text")
	}
	mustTestid(t, doc, "nodes-empty")

	if err := e.st.UpsertNode(t.Context(), nodeFixture(e)); err != nil {
		t.Fatal(err)
	}
	doc = e.page("/nodes", http.StatusOK)
	row := mustTestid(t, doc, "node-row")
	if row.AttrOr("data-peer-id", "") != "12D3KooWAgentSiteTestPeer" {
		t.Errorf("row = %q", text(row))
	}
	if testid(doc, "nodes-empty").Length() != 0 {
		t.Error("empty state shown next to a node")
	}
}

func nodeFixture(e *testEnv) store.Node {
	return store.Node{
		PeerID:        "12D3KooWAgentSiteTestPeer",
		Version:       "test",
		AgentsHosted:  3,
		LastHeartbeat: e.s.now(),
		Status:        store.StatusOnline,
	}
}

// TestMixedScriptNotice: a display name that mixes Latin and Cyrillic
// letters carries a notice on its page and its card; a plain one does not.
func TestMixedScriptNotice(t *testing.T) {
	e := newTestServer(t)
	spoof := weatherInput("paypal-support")
	spoof.DisplayName = "P\u0430yPal Support" // Cyrillic а
	spoofID := e.seedAgent("", spoof).Record.ID
	plain := weatherInput("paypal-helper")
	plain.DisplayName = "PayPal Helper"
	plainID := e.seedAgent("", plain).Record.ID

	doc := e.page("/agents/"+spoofID, http.StatusOK)
	if got := text(mustTestid(t, doc, "mixed-script-notice")); !strings.Contains(got, "Latin and Cyrillic") {
		t.Errorf("notice = %q, want it to name Latin and Cyrillic", got)
	}
	doc = e.page("/agents/"+plainID, http.StatusOK)
	if testid(doc, "mixed-script-notice").Length() != 0 {
		t.Error("a plain Latin name carries the mixed-script notice")
	}

	for _, path := range []string{"/agents", "/"} {
		doc = e.page(path, http.StatusOK)
		card := func(id string) *goquery.Selection {
			return doc.Find(`[data-testid="agent-card"][data-agent-id="` + id + `"]`)
		}
		if card(spoofID).Length() != 1 || card(plainID).Length() != 1 {
			t.Fatalf("%s: cards missing", path)
		}
		if card(spoofID).Find(`[data-testid="mixed-script-notice"]`).Length() != 1 {
			t.Errorf("%s: the mixed-script card has no notice", path)
		}
		if card(plainID).Find(`[data-testid="mixed-script-notice"]`).Length() != 0 {
			t.Errorf("%s: the plain card has a notice", path)
		}
	}
}
