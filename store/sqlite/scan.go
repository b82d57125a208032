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
		l                       store.Listing
		r                       = &l.Record
		tags, skills, endpoints sql.NullString
		seq, pos                int64
		tombstone, local        bool
		issued, expires         sql.NullInt64
		lastSeen, updatedAt     sql.NullInt64
		lastOK, checked         sql.NullInt64
	)
	h := &l.Health
	dest := []any{&r.ID, &r.Name, &r.DisplayName, &r.Description, &tags, &skills, &endpoints,
		&r.Version, &r.Publisher, &r.Owner, &seq, &issued, &expires, &tombstone,
		&l.Envelope, &l.Status, &lastSeen, &l.HostPeerID, &local, &updatedAt, &pos,
		&h.State, &h.LatencyMS, &h.SuccessRate, &lastOK, &checked, &h.Uses7d}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return store.Listing{}, 0, err
	}
	r.Seq = uint64(seq)
	r.Tombstone, l.Local = tombstone, local
	r.IssuedAt, r.ExpiresAt = fromNanos(issued), fromNanos(expires)
	l.LastSeen, l.UpdatedAt = fromNanos(lastSeen), fromNanos(updatedAt)
	h.LastOKAt, h.CheckedAt = fromNanos(lastOK), fromNanos(checked)
	if err := decodeJSON(tags, &r.Tags); err != nil {
		return store.Listing{}, 0, fmt.Errorf("decode tags of agent %s: %w", r.ID, err)
	}
	if err := decodeJSON(skills, &r.Skills); err != nil {
		return store.Listing{}, 0, fmt.Errorf("decode skills of agent %s: %w", r.ID, err)
	}
	if err := decodeJSON(endpoints, &r.Endpoints); err != nil {
		return store.Listing{}, 0, fmt.Errorf("decode endpoints of agent %s: %w", r.ID, err)
	}
	return l, pos, nil
}

func decodeJSON[T any](s sql.NullString, dst *[]T) error {
	if !s.Valid {
		return nil
	}
	return json.Unmarshal([]byte(s.String), dst)
}
