package apiwire

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// FromListing is the API view of a listing, for every surface that sends
// one as JSON (the API, MCP tools and resources). Empty lists are sent as
// [] rather than null, so clients need not tell the two apart.
func FromListing(l store.Listing) Agent {
	r := l.Record
	tags, skills, eps := r.Tags, r.Skills, r.Endpoints
	if tags == nil {
		tags = []string{}
	}
	if skills == nil {
		skills = []agent.Skill{}
	}
	if eps == nil {
		eps = []agent.Endpoint{}
	}
	health := l.Health
	if health.State == "" {
		health.State = agent.HealthUnknown
	}
	return Agent{
		ID: r.ID, Name: r.Name, DisplayName: r.DisplayName, Description: r.Description,
		Tags: tags, Skills: skills, Version: r.Version, Publisher: r.Publisher, Owner: r.Owner,
		Endpoints: eps, Seq: r.Seq, IssuedAt: r.IssuedAt, ExpiresAt: r.ExpiresAt, Tombstone: r.Tombstone,
		Status: l.Status, LastSeen: l.LastSeen, HostPeerID: l.HostPeerID, Local: l.Local,
		Health: health,
	}
}

// FromPage is one page of a search as AgentList.
func FromPage(p store.SearchPage) AgentList {
	out := AgentList{Agents: make([]Agent, 0, len(p.Listings)), NextCursor: p.NextCursor}
	for _, l := range p.Listings {
		out.Agents = append(out.Agents, FromListing(l))
	}
	return out
}

// AppendAgentList appends page as the JSON of AgentList, as
// httpkit.WriteJSON would send FromPage(page) (newline included), but
// from each listing's precomputed PublicJSON where the store gave one:
// the record's fields are not decoded and encoded again, only the node's
// own fields (status, last seen, host, local, health) are.
func AppendAgentList(dst []byte, page store.SearchPage) ([]byte, error) {
	return AppendAgentListVerified(dst, page, nil)
}

// AppendAgentListVerified is AppendAgentList with each agent's
// verified_domains, those domains(publisher) gives (nil: none).
func AppendAgentListVerified(dst []byte, page store.SearchPage, domains func(publisher string) []string) ([]byte, error) {
	dst = append(dst, `{"agents":[`...)
	for i := range page.Listings {
		if i > 0 {
			dst = append(dst, ',')
		}
		var vd []string
		if domains != nil {
			vd = domains(page.Listings[i].Record.Publisher)
		}
		var err error
		if dst, err = appendAgent(dst, &page.Listings[i], vd); err != nil {
			return nil, err
		}
	}
	dst = append(dst, `],"next_cursor":`...)
	dst = AppendString(dst, page.NextCursor)
	return append(dst, "}\n"...), nil
}

// AppendAgentListTotal is AppendAgentListVerified with the search's
// total (AgentList.Total) after next_cursor.
func AppendAgentListTotal(dst []byte, page store.SearchPage, domains func(publisher string) []string, total Total) ([]byte, error) {
	dst, err := AppendAgentListVerified(dst, page, domains)
	if err != nil {
		return nil, err
	}
	dst = dst[:len(dst)-len("}\n")]
	dst = append(dst, `,"total":`...)
	dst = strconv.AppendInt(dst, int64(total.N), 10)
	if !total.Exact {
		dst = append(dst, `,"total_is_estimate":true`...)
	}
	return append(dst, "}\n"...), nil
}

// AppendAgent appends the JSON of FromListing(*l), from l.PublicJSON when
// it is there.
func AppendAgent(dst []byte, l *store.Listing) ([]byte, error) {
	return appendAgent(dst, l, nil)
}

// appendAgent is AppendAgent with the publisher's verified domains.
func appendAgent(dst []byte, l *store.Listing, verified []string) ([]byte, error) {
	pub := l.PublicJSON
	if len(pub) < 2 || pub[len(pub)-1] != '}' {
		a := FromListing(*l)
		a.VerifiedDomains = verified
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("encode agent %s: %w", l.Record.ID, err)
		}
		return append(dst, b...), nil
	}
	health := l.Health
	if health.State == "" {
		health.State = agent.HealthUnknown
	}
	h, err := json.Marshal(health)
	if err != nil {
		return nil, fmt.Errorf("encode health of agent %s: %w", l.Record.ID, err)
	}
	dst = append(dst, pub[:len(pub)-1]...)
	dst = append(dst, `,"status":`...)
	dst = AppendString(dst, l.Status)
	dst = append(dst, `,"last_seen":"`...)
	// time.Time's JSON is its text in quotes, written in place.
	if dst, err = l.LastSeen.AppendText(dst); err != nil {
		return nil, fmt.Errorf("encode last seen of agent %s: %w", l.Record.ID, err)
	}
	dst = append(dst, '"')
	dst = append(dst, `,"host_peer_id":`...)
	dst = AppendString(dst, l.HostPeerID)
	dst = append(dst, `,"local":`...)
	dst = strconv.AppendBool(dst, l.Local)
	dst = append(dst, `,"health":`...)
	dst = append(dst, h...)
	if len(verified) > 0 {
		v, err := json.Marshal(verified)
		if err != nil {
			return nil, fmt.Errorf("encode verified domains of agent %s: %w", l.Record.ID, err)
		}
		dst = append(dst, `,"verified_domains":`...)
		dst = append(dst, v...)
	}
	return append(dst, '}'), nil
}

// AppendString appends s as a JSON string, escaped as encoding/json does
// (HTML too): as it is when every byte is printable ASCII that needs no
// escape (a status, a peer id, a cursor), else through json.Marshal. The
// surfaces that write their pages without reflection share it (this
// package, handlers/mcpregistry).
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// Plain reports whether encoding/json writes c as it is in a string
// (HTML escaped): printable ASCII but '"', '\\', '<', '>' and '&'.
func Plain(c byte) bool { return plain[c] }

// plain is Plain's table.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
