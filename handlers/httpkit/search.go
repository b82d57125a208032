package httpkit

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/store"
)

// CodeBadQuery is the code of a malformed search: a 400, not a 422, since
// the request itself is malformed, not a submitted entity.
const CodeBadQuery = "bad_query"

var validStatuses = map[string]bool{store.StatusOnline: true, store.StatusStale: true, store.StatusOffline: true}

// ParseSearchQuery reads a catalogue search the way GET /api/v1/agents,
// the search page and the MCP search tool all take it: q, tag (repeatable
// or comma-separated), status (repeatable, comma-separated or "all"),
// health (repeatable or comma-separated states), limit and cursor. What is wrong comes back as an *agent.ValidationError
// naming the parameters; BadQuery turns it into a response.
func ParseSearchQuery(v url.Values) (store.SearchQuery, error) {
	q := store.SearchQuery{Q: v.Get("q"), Cursor: v.Get("cursor")}
	fields := map[string]string{}
	if len(q.Q) > 256 {
		fields["q"] = "at most 256 bytes"
	}
	q.Tags = parseTags(v["tag"], fields)
	q.Statuses = parseStatuses(v["status"], fields)
	q.Health = parseHealth(v["health"], fields)
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxLimit {
			fields["limit"] = fmt.Sprintf("must be a number from 1 to %d", store.MaxLimit)
		}
		q.Limit = n
	}
	switch q.Sort = v.Get("sort"); q.Sort {
	case "", store.SortRelevance, store.SortNewest, store.SortName, store.SortUsed:
	default:
		fields["sort"] = "must be relevance, newest, name or used"
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

func parseTags(raws []string, fields map[string]string) []string {
	var tags []string
	for _, raw := range raws {
		for _, t := range strings.Split(raw, ",") {
			if t = strings.ToLower(strings.TrimSpace(t)); t == "" {
				continue
			}
			if !agent.IsSlug(t, 1, agent.MaxTagLen) {
				fields["tag"] = fmt.Sprintf("%q is not a tag", t)
				continue
			}
			tags = append(tags, t)
		}
	}
	if len(tags) > agent.MaxTags {
		fields["tag"] = fmt.Sprintf("at most %d tags", agent.MaxTags)
	}
	return tags
}

func parseStatuses(raws []string, fields map[string]string) []string {
	var statuses []string
	for _, raw := range raws {
		for _, st := range strings.Split(raw, ",") {
			st = strings.TrimSpace(st)
			switch {
			case st == "":
			case st == "all":
				statuses = []string{store.StatusOnline, store.StatusStale, store.StatusOffline}
			case validStatuses[st]:
				statuses = append(statuses, st)
			default:
				fields["status"] = "must be online, stale, offline or all"
			}
		}
	}
	return statuses
}

func parseHealth(raws []string, fields map[string]string) []string {
	var states []string
	for _, raw := range raws {
		for _, st := range strings.Split(raw, ",") {
			switch st = strings.ToLower(strings.TrimSpace(st)); {
			case st == "":
			case agent.IsHealthState(st):
				if !slices.Contains(states, st) {
					states = append(states, st)
				}
			default:
				fields["health"] = "must be healthy, degraded, failing or unknown"
			}
		}
	}
	return states
}

// BadQuery turns ParseSearchQuery's validation error into a 400 bad_query
// naming the parameters; other errors pass through.
func BadQuery(err error) error {
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		return &Error{Status: http.StatusBadRequest, Code: CodeBadQuery, Message: "Some query parameters are invalid; see fields.", Fields: ve.Fields}
	}
	return err
}

// NetworkSearchFailed is the answer to a network search (a DHT round,
// discover.Lookup) that could not run or found no provider because every
// look-up failed: 503, saying whether the node was busy with other
// rounds or the network failed.
func NetworkSearchFailed(err error) error {
	msg := "The network search failed; try again in a moment."
	if errors.Is(err, discover.ErrBusy) {
		msg = "The node is running as many network searches as it allows; try again in a moment."
	}
	return Errorf(http.StatusServiceUnavailable, string(agent.CodeNetworkUnavailable), msg)
}
