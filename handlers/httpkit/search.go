package httpkit

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// CodeBadQuery is the error code of a search (or other query string) whose
// parameters are invalid: a 400, with the parameters named in Fields.
const CodeBadQuery = "bad_query"

// ParseSearchQuery reads a catalogue search from query parameters, the
// same for every surface (the search page, GET /api/v1/agents, the MCP
// search tool): q, tag (repeatable or comma-separated), status
// (repeatable, comma-separated or "all"), limit and cursor.
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
			case st == store.StatusOnline || st == store.StatusStale || st == store.StatusOffline:
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
