package ard_test

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite"
)

// countingCatalog counts the searches that reach the catalogue past the
// read cache's memo.
type countingCatalog struct {
	*store.Cache
	searches atomic.Int64
}

func (c *countingCatalog) SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	c.searches.Add(1)
	return c.Cache.SearchAgents(ctx, q)
}

// verifiedSet is a Publishers whose answers change with its generation,
// as the node's verify.Claims does.
type verifiedSet struct {
	domains map[string][]string
	gen     uint64
}

func (v *verifiedSet) Domains(p string) []string { return v.domains[p] }
func (v *verifiedSet) Generation() uint64        { return v.gen }

// A search from the mirror alone stays memoized while publishers are
// verified (their domains are in every answer), and a change of the
// verified sets is in the next answer.
func TestSearchMemoizedWithVerifiedPublishers(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ard.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cat := &countingCatalog{Cache: store.NewCache(db, time.Minute, 100)}
	l := seedRemote(t, db, "tide-bot", time.Now(), "tides")
	pubs := &verifiedSet{domains: map[string][]string{l.Record.Publisher: {"tides.example"}}, gen: 1}
	h := ard.New(mirrorOnly(cat), cat, nil, "", func(w http.ResponseWriter, _ *http.Request, err error) {
		t.Errorf("fault: %v", err)
		w.WriteHeader(http.StatusInternalServerError)
	})
	h.Publishers = pubs
	ts := registry(t, h)
	body := map[string]any{"query": map[string]any{"text": "tide"}}

	verified := func() bool {
		t.Helper()
		got, _ := post(t, ts, body)
		if len(got.Results) != 1 {
			t.Fatalf("results: %+v", got.Results)
		}
		return got.Results[0].Metadata["agentsite.verified"] == true
	}
	if !verified() || !verified() {
		t.Fatal("the publisher's proved domain is not in the answer")
	}
	if n := cat.searches.Load(); n != 0 {
		t.Errorf("%d searches passed the memo with a generational Publishers; want 0", n)
	}
	pubs.domains, pubs.gen = nil, 2
	if verified() {
		t.Error("an answer memoized before the publisher lost its domain was served after")
	}
}
