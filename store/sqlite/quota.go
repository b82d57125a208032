package sqlite

import "context"

// The statements of the Sink's quota and cap (TestOpenPlanetPlans checks
// their plans).
const (
	hasAgentSQL = `-- name: has_agent
SELECT EXISTS (SELECT 1 FROM agents WHERE id = ?)`
	countPublishedSQL = `-- name: count_published
SELECT count(*) FROM (SELECT 1 FROM agents WHERE publisher = ? AND status <> 'offline' LIMIT ?)`
	countHostedSQL = `-- name: count_hosted
SELECT count(*) FROM (SELECT 1 FROM agents
	WHERE host_peer_id = ? AND status <> 'offline' AND tombstone = 0 LIMIT ?)`
)

// HasAgent implements store.Catalogue: one probe of the unique index on id.
func (db *DB) HasAgent(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := db.r.QueryRowContext(ctx, hasAgentSQL, id).Scan(&ok)
	if err != nil {
		return false, dbErr("has agent "+id, err)
	}
	return ok, nil
}

// CountPublished implements store.Catalogue from the partial index
// agents_publisher alone (it holds the listings that are not offline).
func (db *DB) CountPublished(ctx context.Context, publisher string, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := db.r.QueryRowContext(ctx, countPublishedSQL, publisher, limit).Scan(&n)
	if err != nil {
		return 0, dbErr("count listings of publisher "+publisher, err)
	}
	return n, nil
}

// CountHosted implements store.Catalogue: a walk of agents_host for the
// host's rows.
func (db *DB) CountHosted(ctx context.Context, hostPeerID string, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := db.r.QueryRowContext(ctx, countHostedSQL, hostPeerID, limit).Scan(&n)
	if err != nil {
		return 0, dbErr("count listings of host "+hostPeerID, err)
	}
	return n, nil
}
