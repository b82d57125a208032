package mcpregistry

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// testListings are a hosted agent, one without a description or tags,
// an import under its upstream name, a catalogue listing, and one whose
// strings need escapes.
func testListings() []store.Listing {
	at := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
	rec := agent.Record{ID: "a1", Name: "weather", DisplayName: "Weather <b>", Description: "  Tells\tthe  weather. ",
		Tags: []string{"weather"}, Version: "1.0.0", IssuedAt: at,
		Endpoints: []agent.Endpoint{{Kind: agent.EndpointHTTPMCP, URL: "https://w.example/mcp"}}}
	bare := agent.Record{ID: "a2", Name: "bare", IssuedAt: at,
		Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: "p"}}}
	imported := rec
	imported.ID = "a3"
	imported.Origin = &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.github.user/weather", Version: "2.0.0"}
	catalogue := rec
	catalogue.ID = "a4"
	catalogue.Endpoints = nil
	catalogue.Origin = &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.github.user/files",
		Install: "npx -y @user/files-mcp@1.2.0"}
	odd := rec
	odd.ID = "a5"
	odd.Name = "odd\u2028\x01\xff"
	odd.DisplayName = "Ödd & <odd> \"quoted\" \\ back"
	odd.Tags = []string{"é", "<t>"}
	odd.Origin = &agent.Origin{Registry: "https://cat.example/?a=1&b=<2>", Name: "x"}
	return []store.Listing{
		{Record: rec, Status: "online", HostPeerID: "h", UpdatedAt: at, Health: agent.Health{State: agent.HealthHealthy}},
		{Record: bare, Status: "stale", UpdatedAt: at},
		{Record: imported, Status: "online", HostPeerID: "h", UpdatedAt: at, Local: true},
		{Record: catalogue, Status: "online", HostPeerID: "h", UpdatedAt: at, Local: true},
		{Record: odd, Status: "online", HostPeerID: "h\u2029", UpdatedAt: at},
	}
}

// The handler encodes _meta from structs (server), and readers decode it
// into maps (ServerResponse), as the handler built them before: the bytes
// must be those encoding/json makes of the maps (keys sorted, every key
// the map had), for each of testListings.
func TestStructMetaEncodesAsTheMaps(t *testing.T) {
	for _, l := range testListings() {
		if !utf8.ValidString(l.Record.Name) {
			continue // decoding turns its invalid byte into U+FFFD, which encodes unescaped
		}
		got, err := json.Marshal(fromListing(l, "https://node.example"))
		if err != nil {
			t.Fatal(err)
		}
		var maps ServerResponse
		if err := json.Unmarshal(got, &maps); err != nil {
			t.Fatal(err)
		}
		// The maps held the record's origin itself (encoded in its
		// struct's order), not a map.
		maps.Server.Meta[AgentMeta].(map[string]any)["origin"] = l.Record.Origin
		want, err := json.Marshal(maps)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", l.Record.ID, got, want)
		}
	}
}

// The words of a description are joined by one space, as
// strings.Fields would leave them.
func TestOneSpaced(t *testing.T) {
	for _, s := range []string{"", " ", "a", "a b", " a", "a ", "a  b", "a\tb", "a\nb", "é b", "a\u00a0b", "a\u0085b", "plain words here"} {
		want := ""
		for i, f := range bytes.Fields([]byte(s)) {
			if i > 0 {
				want += " "
			}
			want += string(f)
		}
		if got := oneSpaced(s); got != want {
			t.Errorf("oneSpaced(%q) = %q, want %q", s, got, want)
		}
	}
}

// scanPublic reads what json.Unmarshal reads of a public JSON, for the
// store's own encodings (escapes, brackets and quotes inside strings,
// nulls, an origin or none) and hand-made objects; what it cannot scan it
// leaves to json.Unmarshal (ok false).
func TestScanPublicIsUnmarshal(t *testing.T) {
	recs := []agent.Record{
		{ID: "a", Name: "n", Description: `Says "hi" <b> & {not} [json] \ back`, Tags: []string{"x"},
			Skills:    []agent.Skill{{ID: "s", Name: `a "}]" skill`, Description: "{[", Examples: []string{`"`, `\`}}},
			Endpoints: []agent.Endpoint{{Kind: agent.EndpointHTTPMCP, URL: "https://x.example/mcp?a=1&b=2"}}},
		{ID: "b", Description: "plain, é ünïcode", Origin: &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.x/y", Install: "npx y"}},
		{ID: "c"},
	}
	var docs [][]byte
	for i := range recs {
		b, err := store.PublicRecordJSON(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	docs = append(docs, []byte(` { "description" : "x\u0041" , "endpoints" : null , "n": -1.5e3, "t": true, "o": {"a": [1, {"b": "]"}]} } `),
		[]byte(`{}`), []byte(`{"origin":null,"description":"","endpoints":[]}`),
		[]byte(`{"endpoints":[ {"kind":"a","x":[1,"]"],"peer_id":"p"} , {"url":"\"q\\\\","protocol":"/p/1"},{}]}`))
	for _, b := range docs {
		got, ok := scanPublic(b)
		if !ok {
			t.Errorf("scanPublic(%s): not scanned", b)
			continue
		}
		var want publicFields
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Errorf("scanPublic(%s):\n got %s\nwant %s", b, g, w)
		}
	}
	for _, bad := range []string{``, `[]`, `{"description":}`, `{"description":"x"`, `{"description":"x",}`, `{"a":"b"}x`, `{"description":1}`, `{"endpoints":[{"kind":1}]}`, `{"endpoints":[{},]}`, `{"endpoints":{}}`} {
		if _, ok := scanPublic([]byte(bad)); ok {
			t.Errorf("scanPublic(%s): scanned, want left to json.Unmarshal", bad)
		}
	}
}

// appendList writes what json.Encoder (HTML escaped) writes of a page.
func TestAppendListIsEncode(t *testing.T) {
	for _, cursor := range []string{"", "eyJwIjo5OTAxfQ"} {
		out := serverList{Servers: []server{}, Metadata: Metadata{NextCursor: cursor}}
		for _, l := range testListings() {
			out.Servers = append(out.Servers, fromListing(l, "https://node.example/<x>&"))
		}
		out.Servers = append(out.Servers, server{Server: serverDetail{Schema: "s", Name: "n"}})
		for _, n := range []int{0, 1, len(out.Servers)} {
			page := serverList{Servers: out.Servers[:n], Metadata: out.Metadata}
			page.Metadata.Count = n
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(true)
			if err := enc.Encode(page); err != nil {
				t.Fatal(err)
			}
			got, err := appendList(nil, &page)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%d servers:\n got %s\nwant %s", n, got, want.Bytes())
			}
		}
	}
}
