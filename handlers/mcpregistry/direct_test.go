package mcpregistry

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// structsPage is a page as the handler wrote it before appendPage: each
// listing's record filled in from its public JSON (exportFields), made a
// server struct (fromListing) and the page written by appendList.
func structsPage(listings []store.Listing, next, origin string, since time.Time, ver string) ([]byte, error) {
	out := serverList{Servers: make([]server, 0, len(listings)), Metadata: Metadata{NextCursor: next}}
	for _, l := range listings {
		if !since.IsZero() && l.UpdatedAt.Before(since) {
			continue
		}
		if err := exportFields(&l); err != nil {
			return nil, err
		}
		if !exported(l.Record) {
			continue
		}
		s := fromListing(l, origin)
		if ver != "" && ver != "latest" && s.Server.Version != ver {
			continue
		}
		out.Servers = append(out.Servers, s)
	}
	out.Metadata.Count = len(out.Servers)
	return appendList(nil, &out)
}

// variedListings are listings as a PublicOnly search returns them (the
// record's columns, its public JSON as the store encodes it), varied in
// every value the export writes or reads: descriptions and titles that
// need escapes or cutting, unicode, empty fields, endpoints of every
// kind, origins present or absent (imports, catalogue listings of each
// install line, another node's), local or not, times in other zones.
func variedListings(t *testing.T) []store.Listing {
	t.Helper()
	at := time.Date(2026, 12, 7, 18, 4, 5, 123456789, time.UTC)
	long := strings.Repeat("word ", 30)
	descs := []string{
		"", " ", "Plain words.", "  Leading and  double  spaces ", "tabs\tand\nnewlines",
		strings.TrimSpace(long), strings.Repeat("x", 99) + " y", strings.Repeat("x", 100), strings.Repeat("x", 101),
		strings.Repeat("é", 120), "Ünïcode ☀ words", `HTML <b> & "quotes" \ back`, "line\u2028sep\u2029", "bad \xff byte",
		"nbsp\u00a0here", "ctl\x01char", strings.Repeat("ab ", 40) + "<", "del\x7fchar",
	}
	titles := []string{"", "Weather", "Title <&>", strings.Repeat("T", 120), "Ünï " + strings.Repeat("é", 100), "bad\xfe"}
	endpoints := [][]agent.Endpoint{
		nil,
		{{Kind: agent.EndpointLibp2pMCP, PeerID: "12D3KooWpeer", Protocol: agent.MCPProtocol}},
		{{Kind: agent.EndpointHTTPMCP, URL: "https://w.example/mcp"}},
		{{Kind: agent.EndpointHTTPMCP, URL: ""}, {Kind: agent.EndpointLibp2pMCP, PeerID: "p"}},
		{{Kind: agent.EndpointHTTPMCP, URL: "https://w.example/mcp?a=1&b=<2>"}, {Kind: agent.EndpointHTTPMCP, URL: "https://ü.example/ä"}},
		{{Kind: agent.EndpointA2ACard, URL: "https://w.example/card.json"}},
		{{Kind: "smtp", URL: "mailto:x"}},
		{{Kind: agent.EndpointA2ACard, URL: "https://c"}, {Kind: agent.EndpointHTTPMCP, URL: "https://a\"b\\c"}, {Kind: agent.EndpointLibp2pMCP}},
	}
	origins := []*agent.Origin{
		nil,
		{Registry: agent.OriginMCPRegistry, Name: "io.github.user/weather", Version: "2.0.0"},
		{Registry: agent.OriginMCPRegistry, Name: "io.github.user/weather"},
		{Registry: agent.OriginMCPRegistry, Name: "agentsite.x/y", Version: "3"},
		{Registry: agent.OriginMCPRegistry, Name: "not a name", Version: "3"},
		{Registry: agent.OriginMCPRegistry, Name: "io.github.user/files", Install: "npx -y @user/files-mcp@1.2.0"},
		{Registry: agent.OriginMCPRegistry, Name: "io.github.user/py", Version: "0.1", Install: "uvx py-mcp==0.1"},
		{Registry: agent.OriginMCPRegistry, Name: "io.github.user/img", Install: "docker run -i --rm ghcr.io/u/img:1"},
		{Registry: agent.OriginMCPRegistry, Name: "io.github.user/net", Install: "dnx Net.Mcp@1.0"},
		{Registry: agent.OriginMCPRegistry, Name: "io.github.user/n", Install: "npm @u/n 1.0.0"},
		{Registry: agent.OriginMCPRegistry, Name: "io.github.user/latest", Install: "npx -y x@latest"},
		{Registry: agent.OriginMCPRegistry, Name: "io.github.user/odd", Install: "run <it> & \"see\""},
		{Registry: "https://cat.example/?a=1&b=<2>", Name: "x\u2028", Version: "é"},
	}
	tags := [][]string{nil, {}, {"weather"}, {"é", "<t>", "a\"b"}}
	statuses := []string{"online", "stale", "", "off<line>"}
	health := []string{"", agent.HealthHealthy, agent.HealthFailing, "odd&"}
	hosts := []string{"", "12D3KooWhost", "h\u2029"}
	zone := time.FixedZone("X", -7*3600-30*60)

	var out []store.Listing
	n := 0
	for _, d := range descs {
		for _, eps := range endpoints {
			for _, o := range origins {
				n++
				rec := agent.Record{
					ID: fmt.Sprintf("a%03d", n), Name: "bot-" + fmt.Sprint(n), DisplayName: titles[n%len(titles)],
					Description: d, Tags: tags[n%len(tags)], Version: []string{"", "1.0.0", "2.0.0", "v<1>"}[n%4],
					Publisher: "12D3KooWpub", Endpoints: eps, Seq: uint64(n), IssuedAt: at.Add(time.Duration(n) * time.Minute),
					ExpiresAt: at.Add(24 * time.Hour), Origin: o,
					Skills: []agent.Skill{{ID: "s", Name: `a "}]" skill`, Description: "{[", Examples: []string{`"`, `\`}}},
				}
				if n%7 == 0 {
					rec.IssuedAt = rec.IssuedAt.In(zone)
				}
				if n%11 == 0 {
					rec.Name = "odd\u2028\x01\xff"
				}
				out = append(out, listingOf(t, rec, store.Listing{
					Status: statuses[n%len(statuses)], HostPeerID: hosts[n%len(hosts)], Local: n%3 != 0,
					UpdatedAt: at.Add(time.Duration(n%5) * time.Hour).In(zone), Health: agent.Health{State: health[n%len(health)]},
				}))
			}
		}
	}
	return out
}

// listingOf is rec as a PublicOnly row: its columns (no description,
// endpoints or origin: the export reads those from the public JSON) and
// its public JSON, with l's other fields.
func listingOf(t *testing.T, rec agent.Record, l store.Listing) store.Listing {
	t.Helper()
	b, err := store.PublicRecordJSON(&rec)
	if err != nil {
		t.Fatal(err)
	}
	l.PublicJSON = b
	l.Record = rec
	l.Record.Description, l.Record.Endpoints, l.Record.Origin = "", nil, nil
	return l
}

// oddListings are listings whose public JSON is not as the store writes
// it (spaces, escapes where none are needed, nulls, keys the decoder
// matches without case, duplicates, a value of another type), none, or
// whose origin only its envelope carries.
func oddListings(t *testing.T) []store.Listing {
	t.Helper()
	at := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
	rec := agent.Record{ID: "b1", Name: "odd", DisplayName: "Odd", Tags: []string{"x"}, Version: "1.0.0", IssuedAt: at}
	docs := []string{
		` { "description" : "Spaced  out" , "endpoints" : [ { "kind" : "libp2p-mcp" } ] } `,
		`{"description":"x\u0041","endpoints":[{"kind":"http\u002dmcp","url":"https:\/\/e.example\/mcp"}]}`,
		`{"description":null,"endpoints":[{"kind":"libp2p-mcp"}]}`,
		`{"Description":"case","endpoints":[{"kind":"libp2p-mcp"}]}`,
		`{"description":"one","description":"two","endpoints":[{"kind":"libp2p-mcp"}],"endpoints":[{"kind":"http-mcp","url":"u","url":"v"}]}`,
		`{"description":"d","endpoints":null,"origin":{"registry":"mcp-registry","name":"io.x/y","install":"uvx y"}}`,
		`{"description":"d","endpoints":[],"origin":{"Registry":"mcp-registry","name":"io.x/y","install":"uvx y"}}`,
		`{"description":"d","endpoints":[],"origin":{"registry":"mcp-registry","name":"io.x/y","install":"uvx y","extra":1}}`,
		`{"description":"d","endpoints":[{"kind":"libp2p-mcp"}],"origin":null}`,
		`{"description":"d","endpoints":[{"kind":null}]}`,
		`{"description":"d","endpoints":[{"kind":"libp2p-mcp","peer_id":7}]}`,
		`{"description":"d","endpoints":[{"kind":"libp2p-mcp","x":[1,"]"]}]}`,
		`{"description":"bad \q","endpoints":[{"kind":"libp2p-mcp"}]}`,
		`{"description":"d","endpoints":[{"kind":"http-mcp","url":"\ud800"}]}`,
		`{"description":"d","endpoints":[{"kind":"http-mcp","url":""},{"url":"https://k.example","kind":"http-mcp"}]}`,
		`{"description":"d\\","endpoints":[{"kind":"libp2p-mcp"}],"origin":{"registry":"r","name":"n","version":"\u003c"}}`,
		``,
	}
	var out []store.Listing
	for i, d := range docs {
		r := rec
		r.ID = fmt.Sprintf("b%d", i)
		l := store.Listing{Record: r, Status: "online", HostPeerID: "h", UpdatedAt: at, Local: true, PublicJSON: []byte(d)}
		if d == `` {
			// No public JSON: the record's own columns.
			l.PublicJSON = nil
			l.Record.Description = "From the row"
			l.Record.Endpoints = []agent.Endpoint{{Kind: agent.EndpointHTTPMCP, URL: "https://row.example/mcp"}}
		}
		out = append(out, l)
	}
	// The origin in the envelope only.
	k, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	for _, install := range []string{"", "npx -y @u/sealed@1.0.0"} {
		sealed := agent.Record{Name: "sealed-bot", DisplayName: "Sealed", Description: "Sealed in its envelope.", Seq: 1,
			IssuedAt: at, ExpiresAt: at.Add(time.Hour),
			Endpoints: []agent.Endpoint{{Kind: agent.EndpointHTTPMCP, URL: "https://sealed.example/mcp"}},
			Origin:    &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.github.u/sealed", Version: "9.9.9", Install: install}}
		env, err := agent.Seal(&sealed, k, at)
		if err != nil {
			t.Fatal(err)
		}
		noOrigin := sealed
		noOrigin.Origin = nil
		l := listingOf(t, noOrigin, store.Listing{Status: "online", HostPeerID: "h", UpdatedAt: at, Local: true, Envelope: env})
		out = append(out, l)
		// Its row carries the origin: the envelope is not read.
		l.Record.Origin = &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.github.u/row"}
		out = append(out, l)
	}
	return out
}

// appendPage writes, byte for byte, the page the previous path wrote
// (structsPage), for every listing, filter and origin: the wire format of
// /v0.1/servers did not change.
func TestDirectIsTheStructs(t *testing.T) {
	listings := append(variedListings(t), oddListings(t)...)
	since := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	for _, origin := range []string{"https://node.example", "http://127.0.0.1:18092", "https://node.example/<x>&", "https://nöde.example"} {
		for _, next := range []string{"", "eyJwIjo5OTAxfQ"} {
			for _, f := range []struct {
				since time.Time
				ver   string
			}{{}, {since, ""}, {time.Time{}, "latest"}, {time.Time{}, "1.0.0"}, {time.Time{}, "2.0.0"}, {time.Time{}, "9.9.9"}} {
				for i := 0; i < len(listings); i += 20 {
					page := listings[i:min(i+20, len(listings))]
					want, werr := structsPage(page, next, origin, f.since, f.ver)
					got, gerr := appendPage(nil, page, next, origin, f.since, f.ver)
					if (werr != nil) != (gerr != nil) {
						t.Fatalf("listings %d+: error %v, previous path %v", i, gerr, werr)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("origin %q, since %v, version %q, listings %d+:\n got %s\nwant %s", origin, f.since, f.ver, i, got, want)
					}
				}
			}
		}
	}
	// Each listing alone (a difference shows on its own).
	for _, l := range listings {
		want, werr := structsPage([]store.Listing{l}, "", "https://node.example", time.Time{}, "")
		got, gerr := appendPage(nil, []store.Listing{l}, "", "https://node.example", time.Time{}, "")
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Errorf("%s (%s):\n got %s (%v)\nwant %s (%v)", l.Record.ID, l.PublicJSON, got, gerr, want, werr)
		}
	}
}

// The direct path reads the store's own public JSON itself (scanExport),
// and leaves to the previous path only what it does not read as that path
// did.
func TestScanExportReadsTheStoresJSON(t *testing.T) {
	var s scratch
	for _, l := range variedListings(t) {
		if _, ok := scanExport(l.PublicJSON, &s); !ok {
			t.Errorf("%s: %s not read directly", l.Record.ID, l.PublicJSON)
		}
	}
}
