package portal_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

func TestAgentPage(t *testing.T) {
	e := New(t)
	in := WeatherInput("weather-bot")
	in.Description = "Line one\nLine two\n<script>alert(1)</script>\n  indented & <b>bold</b> and **strong**\n\n- one\n- [x](javascript:alert(1))"
	in.Skills[0].Examples = []string{"<img src=x onerror=alert(1)>"}
	l := e.SeedAgent("alice", in)
	id := l.Record.ID

	resp := e.Do(http.MethodGet, "/agents/"+id, nil)
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "<script>alert(1)</script>") || strings.Contains(string(body), "<img src=x") || strings.Contains(string(body), "<b>bold</b>") {
		t.Fatal("user text is rendered as HTML")
	}
	doc := e.Page("/agents/"+id, http.StatusOK)
	// The description is Markdown, rendered and sanitised as chat replies
	// are: its markup shows as formatting, its HTML as text, and nothing
	// of it runs.
	desc := MustTestid(t, doc, "agent-description")
	for _, want := range []string{"Line one", "<script>alert(1)</script>", "indented & <b>bold</b>"} {
		if got := desc.Text(); !strings.Contains(got, want) {
			t.Errorf("description text = %q, want it to show %q", got, want)
		}
	}
	if got := Text(desc.Find("strong")); got != "strong" {
		t.Errorf("description **strong** = %q, want it rendered as <strong>", got)
	}
	if n := desc.Find("li").Length(); n != 2 {
		t.Errorf("description list items = %d, want 2", n)
	}
	if n := desc.Find("script, b, img, [href^='javascript']").Length(); n != 0 {
		t.Errorf("description holds %d live element(s) from its text", n)
	}
	if desc.Find("br").Length() == 0 {
		t.Error("description lost its line breaks")
	}
	// The signed record waits under Details; the id shows once, in the
	// Connect panel.
	if n := doc.Find(`[data-testid="agent-details"]`).Find(`[data-testid="agent-seq"], [data-testid="agent-publisher"], [data-testid="endpoint"]`).Length(); n != 3 {
		t.Errorf("the record's facts under Details: %d of 3", n)
	}
	if _, open := MustTestid(t, doc, "agent-details").Attr("open"); open {
		t.Error("Details is open on arrival")
	}
	shown := 0
	doc.Find("main [data-testid]").Each(func(_ int, s *goquery.Selection) {
		if Text(s) == id {
			shown++
		}
	})
	if shown != 1 {
		t.Errorf("the agent id stands alone %d times on its page, want once", shown)
	}
	fields := map[string]string{
		"agent-display-name": "Weather Bot",
		"agent-name":         "weather-bot",
		"use-id":             id,
		"agent-version":      "1.2.0",
		"agent-owner":        "@alice",
		"agent-publisher":    e.Node.PeerID(),
		"agent-host":         e.Node.PeerID(),
		"agent-seq":          "",
		"agent-local":        "Hosted here",
	}
	for tid, want := range fields {
		got := Text(MustTestid(t, doc, tid))
		if want != "" && got != want {
			t.Errorf("%s = %q, want %q", tid, got, want)
		}
	}
	if got := MustTestid(t, doc, "health-badge").AttrOr("data-status", ""); got != "online" {
		t.Errorf("status = %q", got)
	}
	if got := MustTestid(t, doc, "agent-tags").Find(`[data-testid="tag"]`).Length(); got != 2 {
		t.Errorf("tags = %d, want 2", got)
	}
	skill := MustTestid(t, doc, "skill")
	if skill.AttrOr("data-skill-id", "") != "forecast" || Text(skill.Find(`[data-testid="skill-example"]`)) != in.Skills[0].Examples[0] {
		t.Errorf("skill = %q", Text(skill))
	}
	if ep := Text(MustTestid(t, doc, "endpoint")); !strings.Contains(ep, agent.MCPProtocol) {
		t.Errorf("endpoint = %q", ep)
	}
	for _, tid := range []string{"agent-issued", "agent-expires", "agent-last-seen"} {
		if _, ok := MustTestid(t, doc, tid).Find("time").Attr("datetime"); !ok {
			t.Errorf("%s has no <time datetime>", tid)
		}
	}

	// Manage buttons: only for the owner.
	if Testid(doc, "edit-agent").Length() != 0 || Testid(doc, "delete-agent").Length() != 0 {
		t.Error("a visitor sees edit/delete")
	}
	e.Signup("bob", "password-bob")
	if doc := e.Page("/agents/"+id, http.StatusOK); Testid(doc, "edit-agent").Length() != 0 {
		t.Error("another user sees edit")
	}
	owner := e.Visitor()
	owner.Login("alice", "password-alice")
	doc = owner.Page("/agents/"+id, http.StatusOK)
	if href := MustTestid(t, doc, "edit-agent").AttrOr("href", ""); href != "/account/agents/"+id+"/edit" {
		t.Errorf("edit href = %q", href)
	}
	if f := MustTestid(t, doc, "delete-agent").Closest("form"); f.AttrOr("action", "") != "/account/agents/"+id+"/delete" || f.AttrOr("method", "") != "post" {
		t.Error("delete is not a POST form")
	}
}

func TestAgentPageMissing(t *testing.T) {
	e := New(t)
	l := e.SeedAgent("", SimpleInput("doomed", "Doomed"))
	if err := e.Server.Registry.Delete(t.Context(), registry.Operator, l.Record.ID); err != nil {
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
			doc := e.Page(tt.path, tt.status)
			MustTestid(t, doc, "error-page")
		})
	}
	doc := e.Page("/agents/"+l.Record.ID, http.StatusGone)
	if got := Text(MustTestid(t, doc, "error-message")); !strings.Contains(got, "deleted") {
		t.Errorf("410 message = %q", got)
	}
}

func TestNodesPage(t *testing.T) {
	e := New(t)
	doc := e.Page("/nodes", http.StatusOK)
	if got := Text(MustTestid(t, doc, "node-peer-id")); got != e.Node.PeerID() {
		t.Errorf("peer id = %q", got)
	}
	addrs := Testid(doc, "node-addr")
	if addrs.Length() == 0 || addrs.Length() != len(e.Node.Addrs()) {
		t.Fatalf("%d addrs shown, node has %d", addrs.Length(), len(e.Node.Addrs()))
	}
	if a := Text(addrs.First()); !strings.HasSuffix(a, "/p2p/"+e.Node.PeerID()) {
		t.Errorf("addr %q is not a full multiaddr", a)
	}
	if copy := addrs.First().Parent().Find(`[data-testid="copy"]`); copy.AttrOr("data-copy", "") != Text(addrs.First()) {
		t.Error("address has no copy button with its text")
	}
	MustTestid(t, doc, "nodes-empty")
	if got := Text(MustTestid(t, doc, "node-reachability")); got != "local network only" {
		t.Errorf("reachability = %q", got)
	}
	if got := Text(MustTestid(t, doc, "node-relayed-peers")); got != "0" {
		t.Errorf("relayed peers = %q", got)
	}
	if Testid(doc, "node-relay-addrs").Length() != 0 {
		t.Error("relay addresses shown without a reservation")
	}

	if err := e.Store.UpsertNode(t.Context(), nodeFixture(e)); err != nil {
		t.Fatal(err)
	}
	doc = e.Page("/nodes", http.StatusOK)
	row := MustTestid(t, doc, "node-row")
	if row.AttrOr("data-peer-id", "") != "12D3KooWAgentSiteTestPeer" {
		t.Errorf("row = %q", Text(row))
	}
	if Testid(doc, "nodes-empty").Length() != 0 {
		t.Error("empty state shown next to a node")
	}
}

func nodeFixture(e *Env) store.Node {
	return store.Node{
		PeerID:        "12D3KooWAgentSiteTestPeer",
		Version:       "test",
		AgentsHosted:  3,
		LastHeartbeat: e.Server.Now().UTC(),
		Status:        store.StatusOnline,
	}
}

// TestMixedScriptNotice: a display name that mixes Latin and Cyrillic
// letters carries a notice on its page and its card; a plain one does not.
func TestMixedScriptNotice(t *testing.T) {
	e := New(t)
	spoof := WeatherInput("paypal-support")
	spoof.DisplayName = "P\u0430yPal Support" // Cyrillic а
	spoofID := e.SeedAgent("", spoof).Record.ID
	plain := WeatherInput("paypal-helper")
	plain.DisplayName = "PayPal Helper"
	plainID := e.SeedAgent("", plain).Record.ID

	doc := e.Page("/agents/"+spoofID, http.StatusOK)
	if got := Text(MustTestid(t, doc, "mixed-script-notice")); !strings.Contains(got, "Latin and Cyrillic") {
		t.Errorf("notice = %q, want it to name Latin and Cyrillic", got)
	}
	doc = e.Page("/agents/"+plainID, http.StatusOK)
	if Testid(doc, "mixed-script-notice").Length() != 0 {
		t.Error("a plain Latin name carries the mixed-script notice")
	}

	for _, path := range []string{"/agents", "/"} {
		doc = e.Page(path, http.StatusOK)
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
