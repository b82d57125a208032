package ard

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentsite/agentsite/store"
)

// Paging a federated search. Its DHT round runs once, with the first
// page: it pulls what it finds into the mirror, and the first page is
// read after it, so the walk goes on over the now larger mirror. The
// store's cursor is a keyset (store.Cursor), so the later pages continue
// exactly where the first ended, each listing once, whatever reaches the
// mirror in between (a newer listing sorts before the cursor: it belongs
// to a later search, not to this walk). A second round on a later page
// could only add listings that sort before its cursor, so there is none.
//
// The page token of a federated walk wraps the store's cursor with the
// round's time window, so every page of the walk, not only the first,
// says which of its listings the round brought (metadata "agentsite.via":
// "dht") and the AgentSite-Federation header says the page continues a
// federated search (continues=?1).

// fedTokenPrefix marks a federated walk's page token.
const fedTokenPrefix = "fed."

// fedCursor is a federated walk's page token.
type fedCursor struct {
	// Cursor is the store's cursor of the next page.
	Cursor string `json:"c"`
	// Start and End bound the round (Unix milliseconds): a listing whose
	// row changed within them came from it.
	Start int64 `json:"s"`
	End   int64 `json:"e"`
}

// window is the round's time window.
func (c fedCursor) window() (time.Time, time.Time) {
	return time.UnixMilli(c.Start), time.UnixMilli(c.End)
}

// roundCursor is the token of the page after next in a walk whose round
// ran from start to end; "" when there is no next page.
func roundCursor(next string, start, end time.Time) string {
	if next == "" {
		return ""
	}
	// Whole milliseconds, widened: a row written at the round's edge is
	// the round's, whatever the clock's grain.
	c := fedCursor{Cursor: next, Start: start.UnixMilli(), End: end.Add(time.Millisecond - 1).UnixMilli()}
	b, _ := json.Marshal(c)
	return fedTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// errBadToken is a page token this registry did not make.
var errBadToken = errors.New("pageToken is not a cursor of this registry; send the token of the previous page, or none")

// parseToken reads a page token: the store's cursor, and the round's
// window when the token continues a federated walk (nil otherwise).
func parseToken(token string) (cursor string, round *fedCursor, err error) {
	raw, ok := strings.CutPrefix(token, fedTokenPrefix)
	if !ok {
		return token, nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(b) > 2048 {
		return "", nil, errBadToken
	}
	var c fedCursor
	if err := json.Unmarshal(b, &c); err != nil || c.Cursor == "" || c.Start <= 0 || c.End < c.Start {
		return "", nil, errBadToken
	}
	if _, _, err := store.DecodeCursor(c.Cursor); err != nil {
		return "", nil, errBadToken
	}
	return c.Cursor, &c, nil
}

// fromRound says whether l came from the round of [start, end]: its row
// changed within the round.
func fromRound(l store.Listing, start, end time.Time) bool {
	return !l.UpdatedAt.Before(start) && !l.UpdatedAt.After(end)
}
