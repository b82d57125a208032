package discover

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentsite/agentsite/store"
)

// Paging a search that ran a round. The round runs once, with the first
// page: it pulls what it finds into the mirror, and the first page is
// read after it, so the walk goes on over the now larger mirror. The
// store's cursor is a keyset (store.Cursor), so the later pages continue
// exactly where the first ended, each listing once, whatever reaches the
// mirror in between (a newer listing sorts before the cursor: it belongs
// to a later search, not to this walk). A second round on a later page
// could only add listings that sort before its cursor, so there is none.
//
// The cursor of such a walk wraps the store's cursor with the round's
// time window, so every page of the walk, not only the first, says which
// of its listings the round brought.

// walkPrefix marks a walk's cursor.
const walkPrefix = "fed."

// Window is the time window of the round a walk ran with its first page.
type Window struct {
	// Start and End bound the round (Unix milliseconds).
	Start int64 `json:"s"`
	End   int64 `json:"e"`
}

// Brought says whether l came from the window's round.
func (w Window) Brought(l store.Listing) bool {
	return InWindow(l, time.UnixMilli(w.Start), time.UnixMilli(w.End))
}

// walkCursor is a walk's cursor as it travels.
type walkCursor struct {
	// Cursor is the store's cursor of the next page.
	Cursor string `json:"c"`
	Window
}

// WalkCursor is the cursor of the page after next in a walk whose round
// ran from start to end; "" when there is no next page.
func WalkCursor(next string, start, end time.Time) string {
	if next == "" {
		return ""
	}
	// Whole milliseconds, widened: a row written at the round's edge is
	// the round's, whatever the clock's grain.
	c := walkCursor{Cursor: next, Window: Window{Start: start.UnixMilli(), End: end.Add(time.Millisecond - 1).UnixMilli()}}
	b, _ := json.Marshal(c)
	return walkPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ContinueWalk is WalkCursor for the next page of a walk in window w.
func ContinueWalk(next string, w Window) string {
	return WalkCursor(next, time.UnixMilli(w.Start), time.UnixMilli(w.End))
}

// ErrBadWalkCursor is a cursor that no walk made.
var ErrBadWalkCursor = errors.New("not a cursor of this node's searches")

// ParseWalkCursor reads a page's cursor: the store's cursor, and the
// round's window when it continues a walk that ran a round (nil
// otherwise; a store cursor is returned as it is, for the search to
// judge).
func ParseWalkCursor(token string) (cursor string, w *Window, err error) {
	raw, ok := strings.CutPrefix(token, walkPrefix)
	if !ok {
		return token, nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(b) > 2048 {
		return "", nil, ErrBadWalkCursor
	}
	var c walkCursor
	if err := json.Unmarshal(b, &c); err != nil || c.Cursor == "" || c.Start <= 0 || c.End < c.Start {
		return "", nil, ErrBadWalkCursor
	}
	if _, _, err := store.DecodeCursor(c.Cursor); err != nil {
		return "", nil, ErrBadWalkCursor
	}
	return c.Cursor, &c.Window, nil
}
