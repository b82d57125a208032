package store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentsite/agentsite/agent"
)

// Cursor is the keyset position after the last row of a page: Pos is the
// listing's first-seen sequence number, Rank its relevance score (only with a
// text query), Name its sort key (only with SortName), Failing whether it
// is among the failing agents that come last. Engines encode and decode it with EncodeCursor/DecodeCursor so both
// produce the same opaque strings.
type Cursor struct {
	Rank    float64 `json:"r,omitempty"`
	Pos     int64   `json:"p"`
	Name    string  `json:"n,omitempty"`
	Failing bool    `json:"f,omitempty"`
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
// last (DESIGN "Agent health"); a health filter may leave one out. Both
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
