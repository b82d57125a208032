package ard

import (
	"errors"

	"github.com/agentsite/agentsite/agent/discover"
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
// The page token of a federated walk (discover.WalkCursor) wraps the
// store's cursor with the round's time window, so every page of the walk, not only the first,
// says which of its listings the round brought (metadata "agentsite.via":
// "dht") and the AgentSite-Federation header says the page continues a
// federated search (continues=?1).

// errBadToken is a page token this registry did not make.
var errBadToken = errors.New("pageToken is not a cursor of this registry; send the token of the previous page, or none")

// parseToken reads a page token: the store's cursor, and the round's
// window when the token continues a federated walk (nil otherwise). The
// token is discover's walk cursor (discover.WalkCursor).
func parseToken(token string) (cursor string, round *discover.Window, err error) {
	cursor, round, err = discover.ParseWalkCursor(token)
	if err != nil {
		return "", nil, errBadToken
	}
	return cursor, round, nil
}
