package postgres

import (
	"context"
	"fmt"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var _ store.ChangeFeed = (*DB)(nil)

// listingChangesSQL reads the listings changed after $1 or numbered one
// of $2, in change number order, at most $3. The two halves of the UNION
// each use agent_changes_seq (a walk from $1 that stops at $3; the
// numbers of $2 looked up), so at most $3 + len($2) rows are joined and
// sorted. A row whose listing was deleted (evicted: migration 0010) has
// no agents row and reads as a tombstone.
const listingChangesSQL = `-- name: listing_changes
SELECT c.pos, c.change_seq, coalesce(a.tombstone, true), coalesce(a.status, 'offline'), coalesce(a.health_state, ''),
	coalesce(a.owner, ''), a.tags, coalesce(r.name, ''), coalesce(r.display_name, ''), coalesce(r.description, ''), r.skills
FROM (
	(SELECT pos, change_seq FROM agent_changes WHERE change_seq > $1 ORDER BY change_seq LIMIT $3)
	UNION
	(SELECT pos, change_seq FROM agent_changes WHERE change_seq = ANY ($2::bigint[]))
) AS c
	LEFT JOIN agents a ON a.pos = c.pos
	LEFT JOIN agent_records r ON r.id = a.id
ORDER BY c.change_seq LIMIT $3`

// ListingChanges implements store.ChangeFeed.
func (db *DB) ListingChanges(ctx context.Context, after int64, also []int64, limit int) ([]store.IndexDoc, error) {
	limit = min(max(limit, 1), store.MaxChanges)
	if also == nil {
		also = []int64{}
	}
	rows, err := db.q.Query(ctx, listingChangesSQL, after, also, limit)
	if err != nil {
		return nil, dbErr("listing changes", err)
	}
	defer rows.Close()
	out := []store.IndexDoc{}
	for rows.Next() {
		var (
			d      store.IndexDoc
			skills []byte
		)
		if err := rows.Scan(&d.Pos, &d.ChangeSeq, &d.Tombstone, &d.Status, &d.Health, &d.Owner, &d.Tags,
			&d.Name, &d.DisplayName, &d.Description, &skills); err != nil {
			return nil, dbErr("listing changes", err)
		}
		if len(d.Tags) == 0 {
			d.Tags = nil
		}
		var s []agent.Skill
		if err := decodeJSON(skills, &s); err != nil {
			return nil, fmt.Errorf("postgres: listing changes: decode skills of listing %d: %w", d.Pos, err)
		}
		d.SkillsText = store.SkillsText(s)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("listing changes", err)
	}
	return out, nil
}

// ListingsAt implements store.ChangeFeed: one query, each position
// looked up in agents_pos.
func (db *DB) ListingsAt(ctx context.Context, pos []int64, publicOnly bool) ([]store.PosListing, error) {
	if len(pos) == 0 {
		return nil, nil
	}
	query := listingsAtSQL
	if publicOnly {
		query = listingsAtPublicSQL
	}
	rows, err := db.q.Query(ctx, query, pos)
	if err != nil {
		return nil, dbErr("listings at", err)
	}
	defer rows.Close()
	// Sized once and scanned in place: a listing is large, and growing
	// the slice copied each one again (12 % of a search's allocations).
	out := make([]store.PosListing, 0, len(pos))
	for rows.Next() {
		out = append(out, store.PosListing{})
		pl := &out[len(out)-1]
		var public []byte
		pl.Listing, pl.Pos, err = scanListing(rows, &public, &pl.ChangeSeq)
		if err != nil {
			return nil, dbErr("listings at", err)
		}
		if err := pl.SetPublicJSON(public); err != nil {
			return nil, fmt.Errorf("postgres: listings at: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("listings at", err)
	}
	return out, nil
}

// listingsAtFrom is the rest of ListingsAt's query after its columns.
const listingsAtFrom = `, r.public_json, coalesce(c.change_seq, 0)
FROM ` + listingFrom + ` LEFT JOIN agent_changes c ON c.pos = a.pos
WHERE a.pos = ANY ($1::bigint[])`

const (
	listingsAtSQL = `-- name: listings_at
SELECT ` + listingColumns + listingsAtFrom
	listingsAtPublicSQL = `-- name: listings_at
SELECT ` + publicColumns + listingsAtFrom
)
