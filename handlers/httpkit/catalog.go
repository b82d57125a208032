package httpkit

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/store"
)

// The catalogue as the JSON surfaces show it: one grammar for a search
// (the API's query string, the portal's search form and MCP's
// search_agents arguments all read it) and one JSON view of a listing.

var validStatuses = map[string]bool{store.StatusOnline: true, store.StatusStale: true, store.StatusOffline: true}

// ParseSearchQuery reads q, tag (repeatable or comma-separated), status
// (repeatable, comma-separated or "all"), limit and cursor. On invalid
// values it returns what it could read and an *agent.ValidationError
// naming the fields.
func ParseSearchQuery(v url.Values) (store.SearchQuery, error) {
	q := store.SearchQuery{Q: v.Get("q"), Cursor: v.Get("cursor")}
	fields := map[string]string{}
	if len(q.Q) > 256 {
		fields["q"] = "at most 256 bytes"
	}
	for _, raw := range v["tag"] {
		for _, t := range strings.Split(raw, ",") {
			if t = strings.ToLower(strings.TrimSpace(t)); t == "" {
				continue
			}
			if !agent.IsSlug(t, 1, agent.MaxTagLen) {
				fields["tag"] = fmt.Sprintf("%q is not a tag", t)
				continue
			}
			q.Tags = append(q.Tags, t)
		}
	}
	if len(q.Tags) > agent.MaxTags {
		fields["tag"] = fmt.Sprintf("at most %d tags", agent.MaxTags)
	}
	for _, raw := range v["status"] {
		for _, st := range strings.Split(raw, ",") {
			st = strings.TrimSpace(st)
			switch {
			case st == "":
			case st == "all":
				q.Statuses = []string{store.StatusOnline, store.StatusStale, store.StatusOffline}
			case validStatuses[st]:
				q.Statuses = append(q.Statuses, st)
			default:
				fields["status"] = "must be online, stale, offline or all"
			}
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxLimit {
			fields["limit"] = fmt.Sprintf("must be a number from 1 to %d", store.MaxLimit)
		}
		q.Limit = n
	}
	if _, _, err := store.DecodeCursor(q.Cursor); err != nil {
		fields["cursor"] = "is invalid; start again without one"
	}
	if len(fields) > 0 {
		return q, &agent.ValidationError{Fields: fields}
	}
	q.Limit = store.NormalizeLimit(q.Limit)
	return q, nil
}

// BadQuery turns ParseSearchQuery's validation error into a 400 bad_query
// (not a 422: the request itself is malformed, not a submitted entity).
func BadQuery(err error) error {
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		return &Error{Status: http.StatusBadRequest, Code: "bad_query", Message: "Some query parameters are invalid; see fields.", Fields: ve.Fields}
	}
	return err
}

// AgentWire is the JSON view of a listing (the API's and MCP's): empty
// lists are [] rather than null.
func AgentWire(l store.Listing) apiwire.Agent {
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
	return apiwire.Agent{
		ID: r.ID, Name: r.Name, DisplayName: r.DisplayName, Description: r.Description,
		Tags: tags, Skills: skills, Version: r.Version, Publisher: r.Publisher, Owner: r.Owner,
		Endpoints: eps, Seq: r.Seq, IssuedAt: r.IssuedAt, ExpiresAt: r.ExpiresAt, Tombstone: r.Tombstone,
		Status: l.Status, LastSeen: l.LastSeen, HostPeerID: l.HostPeerID, Local: l.Local,
	}
}

// AgentListWire is the JSON view of one page of search results.
func AgentListWire(page store.SearchPage) apiwire.AgentList {
	out := apiwire.AgentList{Agents: make([]apiwire.Agent, 0, len(page.Listings)), NextCursor: page.NextCursor}
	for _, l := range page.Listings {
		out.Agents = append(out.Agents, AgentWire(l))
	}
	return out
}
