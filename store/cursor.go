package store

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentsite/agentsite/agent"
)

// Cursor is the keyset position after the last row of a page: Pos is the
// listing's first-seen sequence number, Rank its relevance score (only with a
// text query), Name its sort key (only with SortName), Failing whether it
// is among the failing agents that come last, Stale whether it is in the
// second status pass of its relevance tier (StatusPasses). Engines encode
// and decode it with EncodeCursor/DecodeCursor so both produce the same
// opaque strings.
type Cursor struct {
	Rank    float64 `json:"r,omitempty"`
	Pos     int64   `json:"p"`
	Name    string  `json:"n,omitempty"`
	Uses    int64   `json:"u,omitempty"` // the sort key of SortUsed
	Failing bool    `json:"f,omitempty"`
	Stale   bool    `json:"s,omitempty"`
}

// EncodeCursor makes the opaque cursor string.
func EncodeCursor(c Cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrBadCursor is returned for a cursor this node did not make.
var ErrBadCursor = fmt.Errorf("invalid cursor")

// DecodeCursor parses a cursor; "" gives the zero Cursor and ok=false.
func DecodeCursor(s string) (c Cursor, ok bool, err error) {
	if s == "" {
		return Cursor{}, false, nil
	}
	if len(s) > 1024 {
		return Cursor{}, false, ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, false, ErrBadCursor
	}
	if err := json.Unmarshal(b, &c); err != nil || c.Pos <= 0 {
		return Cursor{}, false, ErrBadCursor
	}
	return c, true, nil
}

// HealthPasses is which passes a search makes, in page order: the agents
// that are not failing (false), then the failing ones (true), which come
// last (docs/architecture.md "Agent health"); a health filter may leave one out. Both
// engines plan their searches by it; the cursor's Failing says which pass
// a page stopped in.
func HealthPasses(health []string) []bool {
	var out []bool
	if len(health) == 0 || slices.ContainsFunc(health, func(s string) bool { return s != agent.HealthFailing }) {
		out = append(out, false)
	}
	if len(health) == 0 || slices.Contains(health, agent.HealthFailing) {
		out = append(out, true)
	}
	return out
}

// StatusPass is one status pass of a relevance tier: the listings of
// Statuses, which never is empty.
type StatusPass struct {
	// Stale: the listings whose host this node does not hear (stale, and
	// offline when a search asks for it); otherwise the online ones.
	Stale    bool
	Statuses []string
}

// StatusPasses splits the statuses a search asks for (none: the default,
// online and stale) into the status passes of each relevance tier, in page
// order: online, then the rest. A pass that can match nothing is left out.
//
// The page order of a search by relevance (a text query, SortRelevance) is
// the passes (failing, tier, stale), each newest first:
//
//	not failing: tier 1 online, tier 1 stale, tier 2 online, tier 2 stale, tier 3 online, tier 3 stale
//	failing:     the same six
//
// Tiers come before status, so a stale listing with the query in its name
// still ranks above an online one that has it only in its description:
// the text says what the searcher wants. Within a tier the listings whose
// host this node hears come first (docs/architecture.md "Peers are adversaries"): a
// rogue peer can deliver any number of valid listings of never-heard
// publishers, newer than every honest one, and the Sink files those stale
// until their host's heartbeats arrive. Failing agents still come after
// every other match (docs/architecture.md "Agent health"), ordered the same way among
// themselves. Without text, and sorted newest first or by name, the order
// is the one asked for (time, or the alphabet), health passes only.
//
// A listing's pass changes with its host's heartbeats and health, so a walk
// over pages while a host comes or goes may show it twice or miss it, as a
// health change does; every listing whose pass stays put is shown once.
//
// The result may be shared: callers must not change it.
func StatusPasses(statuses []string) []StatusPass {
	if len(statuses) == 0 {
		return defaultStatusPasses
	}
	var (
		online bool
		rest   []string
	)
	for _, s := range statuses {
		switch {
		case s == StatusOnline:
			online = true
		case !slices.Contains(rest, s):
			rest = append(rest, s)
		}
	}
	var out []StatusPass
	if online {
		out = append(out, StatusPass{Statuses: []string{StatusOnline}})
	}
	if len(rest) > 0 {
		out = append(out, StatusPass{Stale: true, Statuses: rest})
	}
	return out
}

// defaultStatusPasses are the status passes of a search without
// statuses: most searches.
var defaultStatusPasses = []StatusPass{{Statuses: []string{StatusOnline}}, {Stale: true, Statuses: []string{StatusStale}}}

// Place tells where the pass (failing, rank, stale) of a search is in page
// order against the cursor's: before it (every listing of the pass is on
// earlier pages: skip the pass) or the cursor's own (continue below Pos).
// Searches without relevance tiers pass rank 0 and stale false.
func (c Cursor) Place(failing bool, rank float64, stale bool) (before, at bool) {
	order := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	d := cmp.Or(cmp.Compare(order(failing), order(c.Failing)), cmp.Compare(rank, c.Rank), cmp.Compare(order(stale), order(c.Stale)))
	return d < 0, d == 0
}

// NormalizeLimit clamps a page size.
func NormalizeLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

// MaxMessages bounds one read of a conversation's messages (the chat page
// shows 200 and asks for one more to know whether it cut the list).
const MaxMessages = 500

// NormalizeMessageLimit clamps how many messages one read returns.
func NormalizeMessageLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxMessages:
		return MaxMessages
	}
	return n
}
