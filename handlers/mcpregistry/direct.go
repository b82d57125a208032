package mcpregistry

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/bulk"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/store"
)

// A page of /v0.1/servers is written straight from the search's listings
// into the answer (appendPage): no server struct is built, the values the
// export reads from a listing's public JSON are copied from it as they
// are when they need no escape, and the times are formatted into the
// answer. The bytes are those of the previous path, exportFields,
// fromListing and appendList (TestDirectIsTheStructs holds them); a
// listing whose public JSON the direct path does not read as that path
// did goes through it (appendViaStructs). BENCHMARKS.md, "The registry
// API's distinct search, second pass (stop 40)", has the measurements.

// Constant parts of a server, as appendString writes them.
const (
	howToUseHosted = `"call send_message with this agent_id on the remote, or use the A2A card"`
	sendMessage    = `"send_message"`
)

// appendPage appends the answer of a search (a serverList as appendList
// writes it) of listings: those updated since since (zero: all), exported,
// and, unless ver is "" or "latest", of version ver.
func appendPage(dst []byte, listings []store.Listing, next, origin string, since time.Time, ver string) ([]byte, error) {
	dst = append(dst, `{"servers":[`...)
	n := 0
	var s scratch
	for i := range listings {
		l := &listings[i]
		if !since.IsZero() && l.UpdatedAt.Before(since) {
			continue
		}
		mark := len(dst)
		if n > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		var err error
		if dst, ok, err = appendListing(dst, l, origin, ver, &s); err != nil {
			return nil, err
		}
		if !ok {
			dst = dst[:mark]
			continue
		}
		n++
	}
	dst = append(dst, ']')
	return appendMetadata(dst, Metadata{NextCursor: next, Count: n}), nil
}

// scratch is what appendListing reuses from one listing to the next.
type scratch struct {
	urls [][]byte // the http-mcp endpoints' URLs, as JSON strings
}

// appendListing appends l as a server (ok true), or nothing when it is
// not one of the page (ok false): not exported, or not of version ver.
func appendListing(dst []byte, l *store.Listing, origin, ver string, s *scratch) (_ []byte, ok bool, err error) {
	f, direct := scanExport(l.PublicJSON, s)
	if !direct {
		return appendViaStructs(dst, *l, origin, ver)
	}
	o := f.origin
	if o == nil {
		o = l.Record.Origin
	}
	// exported, as the previous path asked it: before the envelope's
	// origin (withOrigin) is read.
	if !f.mcp && (o == nil || o.Install == "") {
		return dst, false, nil
	}
	if o == nil && len(l.Envelope) > 0 {
		o = withOrigin(*l).Record.Origin
	}
	rec := &l.Record
	version := cmpOr(rec.Version, defaultVersion)
	var up *agent.Origin
	if u, isUp := upstreamOf(o); isUp && l.Local {
		up = u
		if up.Version != "" {
			version = up.Version
		}
	}
	if ver != "" && ver != "latest" && version != ver {
		return dst, false, nil
	}
	line := ""
	if o != nil {
		line = o.Install
	}

	dst = append(dst, `{"server":{"name":`...)
	if up != nil {
		dst = appendString(dst, up.Name)
	} else {
		dst = appendJoined(dst, Namespace, rec.ID, "/", rec.Name)
	}
	if title := firstChars(rec.DisplayName, maxDescription); title != "" {
		dst = append(dst, `,"title":`...)
		dst = appendString(dst, title)
	}
	dst = append(dst, `,"description":`...)
	dst, placeholder := appendDescription(dst, f.description)
	dst = append(dst, `,"version":`...)
	dst = appendString(dst, version)
	dst = append(dst, `,"websiteUrl":`...)
	dst = appendJoined(dst, origin, "/agents/", rec.ID)
	if line == "" {
		dst = append(dst, `,"remotes":[{"type":"streamable-http","url":`...)
		dst = appendJoined(dst, origin, "/mcp")
		dst = append(dst, '}')
		for _, u := range s.urls {
			dst = append(dst, `,{"type":"streamable-http","url":`...)
			dst = appendJSONString(dst, u)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	} else if p, isPkg := bulk.PackageOf(line); isPkg {
		dst = append(dst, `,"packages":[{"registryType":`...)
		dst = appendString(dst, p.RegistryType)
		dst = append(dst, `,"identifier":`...)
		dst = appendString(dst, p.Identifier)
		if p.Version != "" {
			dst = append(dst, `,"version":`...)
			dst = appendString(dst, p.Version)
		}
		if p.RuntimeHint != "" {
			dst = append(dst, `,"runtimeHint":`...)
			dst = appendString(dst, p.RuntimeHint)
		}
		dst = append(dst, `,"transport":{"type":"stdio"}}]`...)
	}

	// _meta of the server: agentMeta, its keys in order.
	dst = append(dst, `,"_meta":{"io.agentsite/agent":{`...)
	if line == "" {
		dst = append(dst, `"a2a_card":`...)
		dst = appendJoined(dst, origin, "/a2a/", rec.ID, "/agent-card.json")
		dst = append(dst, ',')
	}
	dst = append(dst, `"agentsite_name":`...)
	dst = appendJoined(dst, Namespace, rec.ID, "/", rec.Name)
	dst = append(dst, `,"description_placeholder":`...)
	dst = strconv.AppendBool(dst, placeholder)
	dst = append(dst, `,"health":`...)
	if line != "" || l.Health.State == "" {
		dst = append(dst, `"`+agent.HealthUnknown+`"`...)
	} else {
		dst = appendString(dst, l.Health.State)
	}
	dst = append(dst, `,"host":`...)
	dst = appendString(dst, l.HostPeerID)
	if line != "" {
		dst = append(dst, `,"hosted":false`...)
	}
	dst = append(dst, `,"how_to_use":`...)
	if line == "" {
		dst = append(dst, howToUseHosted...)
	} else {
		dst = appendJoined(dst, "install and run it locally (stdio): ", line, "; no node answers for it")
	}
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, rec.ID)
	if line != "" {
		dst = append(dst, `,"install":`...)
		dst = appendString(dst, line)
		dst = append(dst, `,"listed_from":{"listed_by":`...)
		dst = appendString(dst, l.HostPeerID)
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, o.Name)
		dst = append(dst, `,"registry":`...)
		dst = appendString(dst, o.Registry)
		dst = append(dst, `,"version":`...)
		dst = appendString(dst, o.Version)
		dst = append(dst, '}')
	} else {
		dst = append(dst, `,"mcp_tool":`+sendMessage...)
	}
	dst = append(dst, `,"origin":`...)
	dst = appendOrigin(dst, o)
	dst = append(dst, `,"status":`...)
	if line != "" {
		dst = append(dst, `"not-hosted"`...)
	} else {
		dst = appendString(dst, l.Status)
	}
	dst = append(dst, `,"tags":`...)
	dst = appendTags(dst, rec.Tags)

	// _meta of the response: officialMeta.
	dst = append(dst, `}}},"_meta":{"io.modelcontextprotocol.registry/official":{"isLatest":true,"publishedAt":"`...)
	dst = rec.IssuedAt.UTC().AppendFormat(dst, time.RFC3339)
	dst = append(dst, `","status":"active","updatedAt":"`...)
	dst = l.UpdatedAt.UTC().AppendFormat(dst, time.RFC3339)
	return append(dst, `"}}}`...), true, nil
}

// appendViaStructs appends l as a server the previous way: its record
// filled in from its public JSON (exportFields), a server struct
// (fromListing) written by appendServer.
func appendViaStructs(dst []byte, l store.Listing, origin, ver string) ([]byte, bool, error) {
	if err := exportFields(&l); err != nil {
		return nil, false, err
	}
	if !exported(l.Record) {
		return dst, false, nil
	}
	s := fromListing(l, origin)
	if ver != "" && ver != "latest" && s.Server.Version != ver {
		return dst, false, nil
	}
	dst, err := appendServer(dst, &s)
	return dst, err == nil, err
}

// appendMetadata appends a page's metadata and closes the page, as
// appendList does.
func appendMetadata(dst []byte, m Metadata) []byte {
	dst = append(dst, `,"metadata":{`...)
	if m.NextCursor != "" {
		dst = append(dst, `"nextCursor":`...)
		dst = appendString(dst, m.NextCursor)
		dst = append(dst, ',')
	}
	dst = append(dst, `"count":`...)
	dst = strconv.AppendInt(dst, int64(m.Count), 10)
	return append(dst, "}}\n"...)
}

// appendDescription appends the server description of a listing whose
// description is the JSON string raw (nil: none): its words one-spaced,
// cut to maxDescription characters, or NoDescription (placeholder true)
// when that leaves nothing, as fromListing makes it. A description of
// plain bytes (appendString's) already one-spaced is copied as it is.
func appendDescription(dst []byte, raw []byte) ([]byte, bool) {
	if raw == nil {
		return appendString(dst, NoDescription), true
	}
	c := raw[1 : len(raw)-1]
	if isPlain(c) && oneSpacedBytes(c) {
		if len(c) > maxDescription {
			// Every byte a character: firstChars cuts there, and trims the
			// space the cut may leave at the end.
			c = bytes.TrimRight(c[:maxDescription], " ")
		}
		if len(c) == 0 {
			return appendString(dst, NoDescription), true
		}
		dst = append(dst, '"')
		dst = append(dst, c...)
		return append(dst, '"'), false
	}
	s, _ := jsonString(raw) // scanExport checked it decodes
	desc := firstChars(oneSpaced(s), maxDescription)
	if desc == "" {
		return appendString(dst, NoDescription), true
	}
	return appendString(dst, desc), false
}

// oneSpacedBytes: c (plain bytes) has no space at either end and none
// after another.
func oneSpacedBytes(c []byte) bool {
	if len(c) > 0 && (c[0] == ' ' || c[len(c)-1] == ' ') {
		return false
	}
	return bytes.Index(c, []byte("  ")) < 0
}

// isPlain: every byte of c is one appendString writes as it is.
func isPlain(c []byte) bool {
	for _, b := range c {
		if !apiwire.Plain(b) {
			return false
		}
	}
	return true
}

// appendJSONString appends the JSON string raw (as a public JSON has it)
// as appendString writes its value: as it is when its bytes are plain.
func appendJSONString(dst, raw []byte) []byte {
	if isPlain(raw[1 : len(raw)-1]) {
		return append(dst, raw...)
	}
	s, _ := jsonString(raw) // scanExport checked it decodes
	return appendString(dst, s)
}

// appendJoined is appendString of the parts joined.
func appendJoined(dst []byte, parts ...string) []byte {
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			if !apiwire.Plain(p[i]) {
				// An escape (or a character split across two parts):
				// the joined string, as appendString writes it.
				return appendString(dst, strings.Join(parts, ""))
			}
		}
	}
	dst = append(dst, '"')
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return append(dst, '"')
}

// appendOrigin appends o as encoding/json writes an *agent.Origin.
func appendOrigin(dst []byte, o *agent.Origin) []byte {
	if o == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"registry":`...)
	dst = appendString(dst, o.Registry)
	dst = append(dst, `,"name":`...)
	dst = appendString(dst, o.Name)
	if o.Version != "" {
		dst = append(dst, `,"version":`...)
		dst = appendString(dst, o.Version)
	}
	if o.Install != "" {
		dst = append(dst, `,"install":`...)
		dst = appendString(dst, o.Install)
	}
	return append(dst, '}')
}

// appendTags appends tags as encoding/json writes a []string.
func appendTags(dst []byte, tags []string) []byte {
	if tags == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, t := range tags {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, t)
	}
	return append(dst, ']')
}

// exportRaw is what the direct path reads of a public JSON: the
// description as its JSON string (nil: none), whether an endpoint is an
// MCP one, and the origin (the http-mcp URLs go to the scratch).
type exportRaw struct {
	description []byte
	mcp         bool
	origin      *agent.Origin
}

// scanExport reads what scanPublic reads of the public JSON b, without
// making strings of it: direct false when scanPublic would not give the
// same (b empty or not as it scans it, a value that is not what it
// decodes, an origin with keys its struct does not spell exactly), and
// the listing takes the previous path.
func scanExport(b []byte, s *scratch) (f exportRaw, direct bool) {
	if len(b) == 0 {
		return f, false
	}
	var desc, endpoints, origin []byte
	end := scanObject(b, skipSpace(b, 0), func(key, val []byte) bool {
		switch string(key) {
		case "description":
			desc = val
		case "endpoints":
			endpoints = val
		case "origin":
			origin = val
		}
		return true
	})
	if end < 0 || skipSpace(b, end) != len(b) {
		return f, false
	}
	if desc != nil {
		if !stringDecodes(desc) {
			return f, false
		}
		f.description = desc
	}
	s.urls = s.urls[:0]
	if endpoints != nil {
		var ok bool
		if f.mcp, ok = scanMCPEndpoints(endpoints, s); !ok {
			return f, false
		}
	}
	if origin != nil && string(origin) != "null" {
		var ok bool
		if f.origin, ok = scanOrigin(origin); !ok {
			return f, false
		}
	}
	return f, true
}

// stringDecodes: v is a JSON string jsonString decodes.
func stringDecodes(v []byte) bool {
	if len(v) < 2 || v[0] != '"' {
		return false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return true
	}
	_, ok := jsonString(v)
	return ok
}

// scanMCPEndpoints reads what scanEndpoints reads of the JSON array b
// that the export uses: whether an endpoint is an MCP one, and the
// http-mcp endpoints' non-empty URLs (into s.urls, as JSON strings).
// ok false where scanEndpoints fails.
func scanMCPEndpoints(b []byte, s *scratch) (mcp, ok bool) {
	if string(b) == "null" {
		return false, true
	}
	if len(b) < 2 || b[0] != '[' {
		return false, false
	}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return false, skipSpace(b, i+1) == len(b)
	}
	for {
		var kind, url []byte
		i = scanObject(b, i, func(key, val []byte) bool {
			switch string(key) {
			case "kind":
				kind = val
			case "url":
				url = val
			case "peer_id", "protocol":
			default:
				return true
			}
			return stringDecodes(val)
		})
		if i < 0 {
			return false, false
		}
		switch endpointKind(kind) {
		case agent.EndpointLibp2pMCP:
			mcp = true
		case agent.EndpointHTTPMCP:
			mcp = true
			if len(url) > 2 {
				s.urls = append(s.urls, url)
			}
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return mcp, skipSpace(b, i+1) == len(b)
		default:
			return false, false
		}
	}
}

// endpointKind is the value of the JSON string v (nil: "") when it is
// an MCP endpoint's kind, compared without a copy when it has no escapes.
func endpointKind(v []byte) string {
	if v == nil {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 {
		switch c := v[1 : len(v)-1]; string(c) {
		case agent.EndpointLibp2pMCP:
			return agent.EndpointLibp2pMCP
		case agent.EndpointHTTPMCP:
			return agent.EndpointHTTPMCP
		default:
			return ""
		}
	}
	s, _ := jsonString(v)
	return s
}

// scanOrigin is json.Unmarshal of a JSON object into an agent.Origin
// whose keys are its fields' exactly (ok false for any other: the
// decoder matches keys without case, and ignores unknown ones).
func scanOrigin(b []byte) (*agent.Origin, bool) {
	var o agent.Origin
	end := scanObject(b, 0, func(key, val []byte) bool {
		var v *string
		switch string(key) {
		case "registry":
			v = &o.Registry
		case "name":
			v = &o.Name
		case "version":
			v = &o.Version
		case "install":
			v = &o.Install
		default:
			return false
		}
		var ok bool
		*v, ok = jsonString(val)
		return ok
	})
	if end != len(b) {
		return nil, false
	}
	return &o, true
}
