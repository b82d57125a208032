package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agentsite/agentsite/store"
)

var _ store.ChangeFeed = (*DB)(nil)

// listingChangesSQL reads the listings changed after ?1 or numbered one
// of ?2 (a JSON array), in change number order, at most ?3. Plan (pinned
// by plan_test.go): the two halves of the UNION each search
// agent_changes_seq (a walk from ?1 that stops at ?3; a probe per number
// of ?2), so the sort is of at most ?3 + len(?2) rows; each is joined to
// agents by rowid. A row whose listing was deleted (evicted: migration
// 0010) has no agents row and reads as a tombstone.
const listingChangesSQL = `-- name: listing_changes
SELECT c.pos, c.change_seq, coalesce(a.tombstone, 1), coalesce(a.status, 'offline'), coalesce(a.health_state, ''),
	coalesce(a.owner, ''), a.tags, coalesce(a.name, ''), coalesce(a.display_name, ''), coalesce(a.description, ''),
	coalesce(a.skills_text, '')
FROM (
	SELECT * FROM (SELECT pos, change_seq FROM agent_changes WHERE change_seq > ?1 ORDER BY change_seq LIMIT ?3)
	UNION
	SELECT pos, change_seq FROM agent_changes WHERE change_seq IN (SELECT value FROM json_each(?2))
) AS c
LEFT JOIN agents a ON a.pos = c.pos
ORDER BY c.change_seq LIMIT ?3`

// ListingChanges implements store.ChangeFeed.
func (db *DB) ListingChanges(ctx context.Context, after int64, also []int64, limit int) ([]store.IndexDoc, error) {
	limit = min(max(limit, 1), store.MaxChanges)
	if also == nil {
		also = []int64{}
	}
	list, err := json.Marshal(also)
	if err != nil {
		return nil, fmt.Errorf("sqlite: listing changes: encode numbers: %w", err)
	}
	rows, err := db.r.QueryContext(ctx, listingChangesSQL, after, string(list), limit)
	if err != nil {
		return nil, dbErr("listing changes", err)
	}
	defer rows.Close()
	out := []store.IndexDoc{}
	for rows.Next() {
		var (
			d    store.IndexDoc
			tags sql.NullString
		)
		if err := rows.Scan(&d.Pos, &d.ChangeSeq, &d.Tombstone, &d.Status, &d.Health, &d.Owner, &tags,
			&d.Name, &d.DisplayName, &d.Description, &d.SkillsText); err != nil {
			return nil, dbErr("listing changes", err)
		}
		if err := decodeJSON(tags, &d.Tags); err != nil {
			return nil, fmt.Errorf("sqlite: listing changes: decode tags of listing %d: %w", d.Pos, err)
		}
		if len(d.Tags) == 0 {
			d.Tags = nil
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("listing changes", err)
	}
	return out, nil
}

// ListingsAt implements store.ChangeFeed: one query, the positions passed
// as one JSON array, each looked up by rowid.
func (db *DB) ListingsAt(ctx context.Context, pos []int64, publicOnly bool) ([]store.PosListing, error) {
	if len(pos) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(pos)
	if err != nil {
		return nil, fmt.Errorf("sqlite: listings at: encode positions: %w", err)
	}
	query := listingsAtSQL
	if publicOnly {
		query = listingsAtPublicSQL
	}
	rows, err := db.r.QueryContext(ctx, query, string(list))
	if err != nil {
		return nil, dbErr("listings at", err)
	}
	defer rows.Close()
	// Sized once and scanned in place: a listing is large, and growing
	// the slice copied each one again (12 % of a search's allocations).
	// One scanner for the rows, each scanned into its place, the public
	// JSON as the driver read it (ownedBytes): BENCHMARKS.md "Memory at
	// 100k listings", stop 40.
	out := make([]store.PosListing, 0, len(pos))
	var (
		ls     listingScanner
		public ownedBytes
	)
	for rows.Next() {
		out = append(out, store.PosListing{})
		pl := &out[len(out)-1]
		pl.Pos, err = ls.scan(rows, &pl.Listing, &public, &pl.ChangeSeq)
		if err != nil {
			return nil, dbErr("listings at", err)
		}
		if err := pl.SetPublicJSON(public); err != nil {
			return nil, fmt.Errorf("sqlite: listings at: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("listings at", err)
	}
	return out, nil
}

// listingsAtFrom is the rest of ListingsAt's query after its columns.
const listingsAtFrom = `, coalesce(c.change_seq, 0)
FROM agents a LEFT JOIN agent_changes c ON c.pos = a.pos
WHERE a.pos IN (SELECT value FROM json_each(?))`

const (
	listingsAtSQL = `-- name: listings_at
SELECT ` + listingColumns + `, a.public_json` + listingsAtFrom
	listingsAtPublicSQL = `-- name: listings_at
SELECT ` + publicColumns + listingsAtFrom
)
