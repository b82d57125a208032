package apiwire_test

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// TestAppendAgentListIsWriteJSON: the list endpoint's bytes, assembled
// from the stored public JSON, are exactly what encoding FromPage sends,
// with and without public JSON, for awkward values.
func TestAppendAgentListIsWriteJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 20, 1, 2, 345678000, time.UTC)
	full := agent.Record{
		ID: "agent-1", Name: "weather-bot", DisplayName: "Weather <Bot> & \"co\"", Description: "Forecasts\nfor </script> \u2028 cities é 🙂",
		Tags: []string{"weather", "geo"}, Skills: []agent.Skill{{ID: "f", Name: "Forecast", Description: "<b>", Examples: []string{"Paris?"}}},
		Version: "1.2.3", Publisher: "12D3KooWPub", Owner: "alice",
		Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: "12D3KooWPub", Protocol: agent.MCPProtocol}},
		Seq:       7, IssuedAt: at, ExpiresAt: at.Add(time.Hour),
	}
	bare := agent.Record{ID: "agent-2", Name: "x", Seq: 1, IssuedAt: at, ExpiresAt: at, Tombstone: true}
	listings := []store.Listing{
		{Record: full, Status: store.StatusOnline, LastSeen: at, HostPeerID: "12D3KooW<host>", Local: true,
			Health: agent.Health{State: agent.HealthDegraded, LatencyMS: 120, SuccessRate: 0.75, LastOKAt: at, CheckedAt: at}},
		{Record: bare, Status: store.StatusStale},
	}
	for _, withPublic := range []bool{true, false} {
		page := store.SearchPage{NextCursor: "abc<>", Listings: make([]store.Listing, len(listings))}
		copy(page.Listings, listings)
		if withPublic {
			for i := range page.Listings {
				pub, err := store.PublicRecordJSON(&page.Listings[i].Record)
				if err != nil {
					t.Fatal(err)
				}
				page.Listings[i].PublicJSON = pub
			}
		}
		rec := httptest.NewRecorder()
		httpkit.WriteJSON(rec, 200, apiwire.FromPage(page))
		got, err := apiwire.AppendAgentList(nil, page)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, rec.Body.Bytes()) {
			t.Errorf("public JSON %v:\n got %s\nwant %s", withPublic, got, rec.Body.Bytes())
		}
		// With the publishers' verified domains (only the first has any).
		domains := func(p string) []string {
			if p == "12D3KooWPub" {
				return []string{"a.example", "b.example"}
			}
			return nil
		}
		want := apiwire.FromPage(page)
		want.Agents[0].VerifiedDomains = domains("12D3KooWPub")
		rec = httptest.NewRecorder()
		httpkit.WriteJSON(rec, 200, want)
		got, err = apiwire.AppendAgentListVerified(nil, page, domains)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, rec.Body.Bytes()) || !bytes.Contains(got, []byte(`"verified_domains":["a.example","b.example"]`)) {
			t.Errorf("verified, public JSON %v:\n got %s\nwant %s", withPublic, got, rec.Body.Bytes())
		}
	}
	empty, _ := apiwire.AppendAgentList(nil, store.SearchPage{})
	if string(empty) != "{\"agents\":[],\"next_cursor\":\"\"}\n" {
		t.Errorf("empty page = %q", empty)
	}
}
