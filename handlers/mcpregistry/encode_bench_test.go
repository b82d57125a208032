package mcpregistry

import (
	"bytes"
	"encoding/json"
	"testing"
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
