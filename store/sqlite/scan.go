package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agentsite/agentsite/store"
)

// queryListings runs a query selecting listingColumns.
func queryListings(ctx context.Context, q execer, op, query string, args ...any) ([]store.Listing, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, dbErr(op, err)
	}
	defer rows.Close()
	out := []store.Listing{}
	for rows.Next() {
		l, _, err := scanListing(rows)
		if err != nil {
			return nil, dbErr(op, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(op, err)
	}
	return out, nil
}

// scanner is one row: a rowSet or QueryRowContext's result.
type scanner interface {
	Scan(dest ...any) error
}

// scanListing reads listingColumns (plus any extra destinations, e.g. a
// rank) and returns the listing and its pos.
func scanListing(row scanner, extra ...any) (store.Listing, int64, error) {
	var (
		l  store.Listing
		ls listingScanner
	)
	pos, err := ls.scan(row, &l, extra...)
	if err != nil {
		return store.Listing{}, 0, err
	}
	return l, pos, nil
}

// listingScanner reads listingColumns into listings, many rows with one
// set of destinations: a query of many listings (ListingsAt, a page of
// the search index) made a new slice of them and their temporaries for
// every row (BENCHMARKS.md "Memory at 100k listings", stop 40). Its zero
// value is ready; it is not for concurrent use.
type listingScanner struct {
	dest                    []any
	tags, skills, endpoints sql.NullString
	seq, pos                int64
	tombstone, local        bool
	issued, expires         sql.NullInt64
	lastSeen, updatedAt     sql.NullInt64
	lastOK, checked         sql.NullInt64
}

// scan reads one row (listingColumns and extra) into l, which should be
// zero, and returns its pos.
func (ls *listingScanner) scan(row scanner, l *store.Listing, extra ...any) (int64, error) {
	r, h := &l.Record, &l.Health
	ls.dest = append(ls.dest[:0], &r.ID, &r.Name, &r.DisplayName, &r.Description, &ls.tags, &ls.skills, &ls.endpoints,
		&r.Version, &r.Publisher, &r.Owner, &ls.seq, &ls.issued, &ls.expires, &ls.tombstone,
		&l.Envelope, &l.Status, &ls.lastSeen, &l.HostPeerID, &ls.local, &ls.updatedAt, &ls.pos,
		&h.State, &h.LatencyMS, &h.SuccessRate, &ls.lastOK, &ls.checked, &h.Uses7d)
	ls.dest = append(ls.dest, extra...)
	if err := row.Scan(ls.dest...); err != nil {
		return 0, err
	}
	r.Seq = uint64(ls.seq)
	r.Tombstone, l.Local = ls.tombstone, ls.local
	r.IssuedAt, r.ExpiresAt = fromNanos(ls.issued), fromNanos(ls.expires)
	l.LastSeen, l.UpdatedAt = fromNanos(ls.lastSeen), fromNanos(ls.updatedAt)
	h.LastOKAt, h.CheckedAt = fromNanos(ls.lastOK), fromNanos(ls.checked)
	if err := decodeJSON(ls.tags, &r.Tags); err != nil {
		return 0, fmt.Errorf("decode tags of agent %s: %w", r.ID, err)
	}
	if err := decodeJSON(ls.skills, &r.Skills); err != nil {
		return 0, fmt.Errorf("decode skills of agent %s: %w", r.ID, err)
	}
	if err := decodeJSON(ls.endpoints, &r.Endpoints); err != nil {
		return 0, fmt.Errorf("decode endpoints of agent %s: %w", r.ID, err)
	}
	return ls.pos, nil
}

// ownedBytes is a blob column kept as the driver hands it over, without
// the copy that a scan into a *[]byte makes: modernc's driver copies each
// blob out of SQLite into a new slice per row and never reuses it
// (storetest's ListingsAt conformance test reads two rows at once and
// compares each one's public JSON). NULL is nil.
type ownedBytes []byte

// Scan implements sql.Scanner.
func (b *ownedBytes) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*b = nil
	case []byte:
		*b = v
	case string:
		*b = []byte(v)
	default:
		return fmt.Errorf("blob column: unexpected %T", src)
	}
	return nil
}

func decodeJSON[T any](s sql.NullString, dst *[]T) error {
	if !s.Valid {
		return nil
	}
	return json.Unmarshal([]byte(s.String), dst)
}
