package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/store"
)

// bigCatalog is a host of many local agents and tags, in memory.
type bigCatalog struct {
	ids  []string // sorted
	tags []store.TagCount
}

// fakeID is a well-formed agent id (base32: digits become letters).
func fakeID(i int) string {
	return strings.Map(func(r rune) rune { return 'a' + r - '0' }, fmt.Sprintf("%052d", i))
}

func newBigCatalog(agents, tags int) *bigCatalog {
	c := &bigCatalog{}
	for i := range agents {
		c.ids = append(c.ids, fakeID(i))
	}
	sort.Strings(c.ids)
	for i := range tags {
		c.tags = append(c.tags, store.TagCount{Tag: fmt.Sprintf("tag-%03d", i), Count: tags - i})
	}
	return c
}

func (c *bigCatalog) SearchAgents(context.Context, store.SearchQuery) (store.SearchPage, error) {
	return store.SearchPage{}, nil
}

func (c *bigCatalog) ListTags(_ context.Context, limit int) ([]store.TagCount, error) {
	return c.tags[:min(limit, len(c.tags))], nil
}

func (c *bigCatalog) GetAgent(_ context.Context, id string) (store.Listing, error) {
	if i := sort.SearchStrings(c.ids, id); i < len(c.ids) && c.ids[i] == id {
		return store.Listing{Record: agent.Record{ID: id}}, nil
	}
	return store.Listing{}, store.ErrNotFound
}

func (c *bigCatalog) CountLocal(context.Context) (store.LocalCount, error) {
	return store.LocalCount{N: len(c.ids), Digest: int64(len(c.ids))}, nil
}

func (c *bigCatalog) LocalRefs(_ context.Context, q store.LocalQuery) ([]store.LocalRef, error) {
	i := sort.SearchStrings(c.ids, q.After)
	if i < len(c.ids) && c.ids[i] == q.After {
		i++
	}
	var out []store.LocalRef
	for ; i < len(c.ids) && len(out) < q.PageLimit(); i++ {
		out = append(out, store.LocalRef{ID: c.ids[i], Name: "bot-" + c.ids[i][40:]})
	}
	return out, nil
}

func bigHost(t *testing.T, agents, tags int) *public {
	t.Helper()
	c := newBigCatalog(agents, tags)
	s := &Server{
		Catalog:     c,
		Discover:    discover.New(discover.Deps{Catalogue: c}),
		AdmitOrigin: func(http.ResponseWriter, *http.Request) bool { return true },
		Version:     "test",
		Logger:      slog.New(slog.DiscardHandler),
		Now:         time.Now,
	}
	return s.Handler().(*guard).p
}

// TestCompletionBounds: a completion gives at most 100 values (the MCP
// spec's cap), each starting with what was typed, however many agents
// and tags match.
func TestCompletionBounds(t *testing.T) {
	p := bigHost(t, 250, 500)
	ids, err := p.completeIDs(t.Context(), "aa")
	if err != nil || len(ids) != maxCompletions {
		t.Fatalf("ids for aa: %d values, %v; want %d", len(ids), err, maxCompletions)
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, "aa") {
			t.Errorf("id %s does not start with aa", id)
		}
	}
	one, err := p.completeIDs(t.Context(), fakeID(7))
	if err != nil || len(one) != 1 {
		t.Errorf("ids for one agent's whole id: %v, %v", one, err)
	}
	tags, err := p.completeTags(t.Context(), "TAG-")
	if err != nil || len(tags) != maxCompletions || tags[0] != "tag-000" {
		t.Errorf("tags for TAG-: %d values (first %v), %v; want %d, the most used first", len(tags), tags[:min(1, len(tags))], err, maxCompletions)
	}
	if none, _ := p.completeTags(t.Context(), "nope"); len(none) != 0 {
		t.Errorf("tags for nope: %v", none)
	}
}

// TestLocalListsArePaged: resources/list and prompts/list give this
// node's agents a page at a time, with a cursor to the next.
func TestLocalListsArePaged(t *testing.T) {
	p := bigHost(t, 250, 0)
	for _, method := range []string{"resources/list", "prompts/list"} {
		seen, pages, cursor := 0, 0, ""
		for {
			params := "{}"
			if cursor != "" {
				params = fmt.Sprintf(`{"cursor":%q}`, cursor)
			}
			raw := p.srv.HandleMessage(t.Context(), json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)))
			b, _ := json.Marshal(raw)
			var resp struct {
				Result struct {
					Resources  []json.RawMessage `json:"resources"`
					Prompts    []json.RawMessage `json:"prompts"`
					NextCursor string            `json:"nextCursor"`
				} `json:"result"`
			}
			if err := json.Unmarshal(b, &resp); err != nil {
				t.Fatalf("%s: %s: %v", method, b, err)
			}
			n := len(resp.Result.Resources) + len(resp.Result.Prompts)
			if n > listPage {
				t.Fatalf("%s: a page of %d, want at most %d", method, n, listPage)
			}
			seen, pages, cursor = seen+n, pages+1, resp.Result.NextCursor
			if cursor == "" || pages > 10 {
				break
			}
		}
		want := 250
		if method == "prompts/list" {
			want++ // chat_with_agent
		}
		if seen != want || pages < 3 {
			t.Errorf("%s: %d entries in %d pages, want %d in at least 3", method, seen, pages, want)
		}
	}
}
