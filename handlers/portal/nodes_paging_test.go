package portal_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// TestNodesPaging: /nodes shows the nodes heard from 100 at a time, in
// peer ID order, with plain next and previous links; the counts and the
// front page's count of nodes cover every page (this node once, even with
// a row of its own), and the picture draws no more than a page.
func TestNodesPaging(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		at := time.Now().UTC()
		var ids []string
		for i := range 250 {
			id := fmt.Sprintf("12D3KooWTestPeer%04d", i)
			ids = append(ids, id)
			if err := e.Store.UpsertNode(t.Context(), store.Node{PeerID: id, Version: "test", AgentsHosted: 1, LastHeartbeat: at, Status: store.StatusOnline}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Store.UpsertNode(t.Context(), store.Node{PeerID: e.Node.PeerID(), LastHeartbeat: at, Status: store.StatusOnline}); err != nil {
			t.Fatal(err)
		}
		rowsOf := func(doc *goquery.Document) []string {
			var out []string
			Testid(doc, "node-row").Each(func(_ int, s *goquery.Selection) { out = append(out, s.AttrOr("data-peer-id", "")) })
			return out
		}
		page := func(path string) (*goquery.Document, []string) {
			t.Helper()
			doc := e.Page(path, http.StatusOK)
			if got := Text(MustTestid(t, doc, "nodes-heard")); got != "250" {
				t.Errorf("%s: nodes heard %q, want 250 (not this node)", path, got)
			}
			if got := Text(MustTestid(t, doc, "nodes-known")); got != "251" {
				t.Errorf("%s: nodes known %q, want 251", path, got)
			}
			if n := Testid(doc, "net-peer").Length(); n > 100 {
				t.Errorf("%s: the picture draws %d peers, more than a page", path, n)
			}
			return doc, rowsOf(doc)
		}
		link := func(doc *goquery.Document, id string) string {
			return Testid(doc, id).AttrOr("href", "")
		}

		doc, rows := page("/nodes")
		all := append(slices.Clone(ids), e.Node.PeerID()) // the table lists this node's row too
		slices.Sort(all)
		if len(rows) != 100 {
			t.Fatalf("first page: %d rows, want 100", len(rows))
		}
		if link(doc, "nodes-prev") != "" || link(doc, "nodes-next") == "" {
			t.Errorf("first page: prev %q next %q; want only next", link(doc, "nodes-prev"), link(doc, "nodes-next"))
		}
		var seen []string
		seen = append(seen, rows...)
		next := link(doc, "nodes-next")
		for next != "" {
			doc, rows = page(next)
			if link(doc, "nodes-prev") == "" {
				t.Errorf("%s: no link back", next)
			}
			seen = append(seen, rows...)
			next = link(doc, "nodes-next")
			if len(seen) > 300 {
				t.Fatal("the pages do not end")
			}
		}
		if fmt.Sprint(seen) != fmt.Sprint(all) {
			t.Errorf("pages list %d nodes, want every one of %d once in peer ID order", len(seen), len(all))
		}
		if len(rows) != 51 {
			t.Errorf("last page: %d rows, want 51", len(rows))
		}
		prevDoc, prevRows := page(link(doc, "nodes-prev"))
		if fmt.Sprint(prevRows) != fmt.Sprint(seen[100:200]) || link(prevDoc, "nodes-next") == "" || link(prevDoc, "nodes-prev") == "" {
			t.Errorf("back from the last page: %d rows from %v, want the second page", len(prevRows), first(prevRows))
		}

		home := e.Page("/", http.StatusOK)
		if got := Text(MustTestid(t, home, "count-nodes")); got != "251" {
			t.Errorf("home counts %q nodes, want 251", got)
		}
	})
}

func first(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}
