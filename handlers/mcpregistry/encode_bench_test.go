package mcpregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// benchPage is a page of 20 servers as the seeded catalogue's searches
// return them.
func benchPage() serverList {
	out := serverList{Metadata: Metadata{NextCursor: "eyJwIjo5OTAxfQ", Count: 20}}
	ls := testListings()
	for i := 0; i < 20; i++ {
		l := ls[0]
		l.Record.Description = "A quiet agent that solves math problems step by step. It also explains statistics and probability with examples."
		out.Servers = append(out.Servers, fromListing(l, "http://127.0.0.1:18092"))
	}
	return out
}

// A page of the search's answer through encoding/json (as before) and
// through appendList (go test -bench . ./handlers/mcpregistry/).
func BenchmarkEncodeJSON(b *testing.B) {
	p := benchPage()
	for b.Loop() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(true)
		_ = enc.Encode(p)
	}
}

func BenchmarkAppendList(b *testing.B) {
	p := benchPage()
	for b.Loop() {
		_, _ = appendList(make([]byte, 0, 64+20*1536), &p)
	}
}

// benchListings are 20 listings as a PublicOnly search of the seeded
// catalogue returns them (a hosted agent, its description longer than
// the export's, two skills, a libp2p-mcp endpoint).
func benchListings(b *testing.B) []store.Listing {
	at := time.Date(2026, 12, 7, 21, 29, 32, 33864139, time.UTC)
	var out []store.Listing
	for i := 0; i < 20; i++ {
		rec := agent.Record{ID: fmt.Sprintf("lwrxayzu7r5ldeunekl65iavxevklt6o5n3y36lwmrev3gx56h%02d", i), Name: fmt.Sprintf("math-quiet-%d", i),
			DisplayName: "Quiet Calculator",
			Description: "A quiet agent that solves math problems step by step. It also explains statistics and probability with examples. Good with statistics and geometry. Built with an open-source model and a small tool set.",
			Tags:        []string{"math", "calculator", "education"},
			Skills: []agent.Skill{{ID: "solve", Name: "Solve", Description: "Solves an equation and shows the steps.", Examples: []string{"Solve x^2 - 5x + 6 = 0"}},
				{ID: "convert", Name: "Convert units", Description: "Converts between units.", Examples: []string{"3 miles in kilometres"}}},
			Version: "1.1.14", Publisher: "12D3KooWRA764hd2LDbjjpda2qpTcCzQULUZb7pvnvJdXntgYt8m",
			Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: "12D3KooWRA764hd2LDbjjpda2qpTcCzQULUZb7pvnvJdXntgYt8m", Protocol: agent.MCPProtocol}},
			Seq:       1, IssuedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
		pub, err := store.PublicRecordJSON(&rec)
		if err != nil {
			b.Fatal(err)
		}
		rec.Description, rec.Endpoints = "", nil
		out = append(out, store.Listing{Record: rec, PublicJSON: pub, Status: "online", HostPeerID: rec.Publisher, UpdatedAt: at})
	}
	return out
}

// A page of a search that misses the memo, from the listings to the
// answer: the previous path (exportFields, fromListing, appendList) and
// the direct one (appendPage).
func BenchmarkPageStructs(b *testing.B) {
	ls := benchListings(b)
	for b.Loop() {
		_, _ = structsPage(ls, "eyJwIjo5OTAxfQ", "http://127.0.0.1:18092", time.Time{}, "")
	}
}

func BenchmarkPageDirect(b *testing.B) {
	ls := benchListings(b)
	for b.Loop() {
		_, _ = appendPage(make([]byte, 0, 64+1536*len(ls)), ls, "eyJwIjo5OTAxfQ", "http://127.0.0.1:18092", time.Time{}, "")
	}
}

func BenchmarkScanExport(b *testing.B) {
	ls := benchListings(b)
	var s scratch
	for b.Loop() {
		for i := range ls {
			scanExport(ls[i].PublicJSON, &s)
		}
	}
}
