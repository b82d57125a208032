package postgres

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/store"
)

// HasAgent implements store.Catalogue: one probe of the primary key.
func (db *DB) HasAgent(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := db.q.QueryRow(ctx, `-- name: has_agent
SELECT EXISTS (SELECT 1 FROM agents WHERE id = $1)`, id).Scan(&ok)
	if err != nil {
		return false, dbErr("has agent "+id, err)
	}
	return ok, nil
}

// CountPublished implements store.Catalogue: the publisher's rows of
// agent_records_publisher, each joined to its listing by the primary key
// for the status, at most limit of them.
func (db *DB) CountPublished(ctx context.Context, publisher string, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := db.q.QueryRow(ctx, `-- name: count_published
SELECT count(*) FROM (
	SELECT 1 FROM agent_records r JOIN agents a ON a.id = r.id
	WHERE r.publisher = $1 AND a.status <> 'offline'
	LIMIT $2
) held`, publisher, limit).Scan(&n)
	if err != nil {
		return 0, dbErr("count listings of publisher "+publisher, err)
	}
	return n, nil
}

// CountHosted implements store.Catalogue: a walk of the partial index
// agents_host (listings that are not offline).
func (db *DB) CountHosted(ctx context.Context, hostPeerID string, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := db.q.QueryRow(ctx, `-- name: count_hosted
SELECT count(*) FROM (
	SELECT 1 FROM agents
	WHERE host_peer_id = $1 AND status <> 'offline' AND NOT tombstone
	LIMIT $2
) hosted`, hostPeerID, limit).Scan(&n)
	if err != nil {
		return 0, dbErr("count listings of host "+hostPeerID, err)
	}
	return n, nil
}

// ExpireUnheard implements store.Network: the candidates are the rows of
// agents_unheard (stale, not local), each host probed in the nodes
// table's primary key, store.ExpireBatch a statement, each committed on
// its own (store.ExpireInBatches).
func (db *DB) ExpireUnheard(ctx context.Context, before time.Time) (int, error) {
	return store.ExpireInBatches(ctx, func(ctx context.Context) (int, error) {
		var n int
		err := db.q.QueryRow(ctx, `-- name: expire_unheard
WITH changed AS (
	UPDATE agents a SET status = 'offline'
	WHERE a.id IN (SELECT c.id FROM agents c
		WHERE c.status = 'stale' AND NOT c.local AND c.last_seen < $1
		  AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.peer_id = c.host_peer_id)
		LIMIT $2)
	  AND a.status = 'stale'
	RETURNING id, visible`+syncTagVisibility, before, store.ExpireBatch).Scan(&n)
		if err != nil {
			return 0, dbErr("expire unheard listings", err)
		}
		return n, nil
	})
}
