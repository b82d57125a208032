package portal_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/web"
)

// TestPublisherPage: "by alice" on a card and on the agent page opens the
// page of alice's agents on that publisher; the publisher's own page
// lists every agent it signed and no one else's, on both store engines.
func TestPublisherPage(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		self := e.Node.PeerID()
		a1 := e.SeedAgent("alice", WeatherInput("alice-one")).Record.ID
		a2 := e.SeedAgent("alice", WeatherInput("alice-two")).Record.ID
		b1 := e.SeedAgent("bob", WeatherInput("bob-one")).Record.ID
		remote := e.SeedRemote("elsewhere", "Elsewhere", "alice") // another publisher's alice
		e.NameNode(remote.Record.Publisher, "node-b")

		ids := func(path string) []string {
			t.Helper()
			doc := e.Page(path, http.StatusOK)
			var out []string
			Testid(doc, "agent-card").Each(func(_ int, s *goquery.Selection) { out = append(out, s.AttrOr("data-agent-id", "")) })
			slices.Sort(out)
			return out
		}
		sorted := func(s ...string) []string { slices.Sort(s); return s }

		// From the card: the owner links to the owner's page.
		doc := e.Page("/agents", http.StatusOK)
		href := doc.Find(`[data-agent-id="`+a1+`"] [data-testid="owner-link"]`).AttrOr("href", "")
		if want := "/publishers/" + self + "?owner=alice"; href != want {
			t.Fatalf("card owner link = %q, want %q", href, want)
		}
		if got, want := ids(href), sorted(a1, a2); !slices.Equal(got, want) {
			t.Errorf("alice's page lists %v, want %v (not bob's, not another publisher's alice)", got, want)
		}
		if got := Text(MustTestid(t, e.Page(href, http.StatusOK), "publisher-title")); !strings.HasPrefix(got, "alice on ") {
			t.Errorf("title = %q", got)
		}
		// From the agent page too, and its "more from this publisher".
		page := e.Page("/agents/"+remote.Record.ID, http.StatusOK)
		if got := MustTestid(t, page, "owner-link").AttrOr("href", ""); got != web.PublisherHref(remote.Record.Publisher, "alice") {
			t.Errorf("agent page owner link = %q", got)
		}
		if got, want := ids(web.PublisherHref(remote.Record.Publisher, "alice")), []string{remote.Record.ID}; !slices.Equal(got, want) {
			t.Errorf("node-b's alice lists %v, want %v", got, want)
		}
		more := MustTestid(t, e.Page("/agents/"+b1, http.StatusOK), "publisher-link").AttrOr("href", "")
		if got, want := ids(more), sorted(a1, a2, b1); !slices.Equal(got, want) {
			t.Errorf("this publisher's page lists %v, want %v", got, want)
		}
		if got := Text(MustTestid(t, e.Page(web.PublisherHref(remote.Record.Publisher, ""), http.StatusOK), "publisher-title")); !strings.Contains(got, "node-b") {
			t.Errorf("node-b's page title = %q, want it named", got)
		}

		// Nonsense ids and names are refused with what to do.
		if doc := e.Page("/publishers/not-a-peer", http.StatusNotFound); !strings.Contains(doc.Text(), "/publishers/<its peer id>") {
			t.Error("a bad publisher id does not say what a publisher page is")
		}
		e.Page("/publishers/"+self+"?owner="+url.QueryEscape(strings.Repeat("x", 65)), http.StatusBadRequest)
	})
}
