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

// ExpireUnheard implements store.Network: the hosts of listings that are
// not offline are walked in agents_host, one probe each (a loose index
// scan), those without a node row kept but self (this node has none, and
// its listings are all local: reading its 100k listings through
// agents_host on every sweep to find none to expire was a fifth of an idle
// host's CPU), and their stale listings that
// are not local, found in agents_host too (LATERAL: a join was planned
// as a scan of all of agents) and updated through the primary key (= ANY
// of an array: a semi-join was planned as a scan of all of agents
// whenever the table looked small), expired, store.ExpireBatch a statement, each committed on
// its own (store.ExpireInBatches). Walking the candidate listings instead
// (agents_unheard) read every stale listing of every sweep when their
// hosts were heard: at 1M listings from 50 heard hosts, ~1 s a sweep on an
// idle machine, past the 5 s store deadline on a loaded one.
func (db *DB) ExpireUnheard(ctx context.Context, before time.Time, self string) (int, error) {
	return store.ExpireInBatches(ctx, func(ctx context.Context) (int, error) {
		return expireUnheardBatch(ctx, db.q, before, self)
	})
}

// expireUnheardSQL is one batch of ExpireUnheard ($1 before, $2 the batch,
// $3 this node's peer id).
const expireUnheardSQL = `-- name: expire_unheard
WITH RECURSIVE hosts (h) AS (
	(SELECT host_peer_id FROM agents WHERE status <> 'offline' ORDER BY host_peer_id LIMIT 1)
	UNION ALL
	SELECT (SELECT a.host_peer_id FROM agents a
		WHERE a.status <> 'offline' AND a.host_peer_id > hosts.h
		ORDER BY a.host_peer_id LIMIT 1)
	FROM hosts WHERE hosts.h IS NOT NULL
), unheard AS (
	SELECT h FROM hosts
	WHERE h IS NOT NULL AND h <> $3 AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.peer_id = hosts.h)
), changed AS (
	UPDATE agents a SET status = 'offline'
	WHERE a.id = ANY (ARRAY(SELECT c.id FROM unheard u CROSS JOIN LATERAL (
			SELECT c.id FROM agents c
			WHERE c.host_peer_id = u.h AND c.status <> 'offline' -- agents_host
			  AND c.status = 'stale' AND NOT c.local AND c.last_seen < $1
			LIMIT $2) c
		LIMIT $2))
	  AND a.status = 'stale'
	RETURNING id, visible` + syncTagVisibility

func expireUnheardBatch(ctx context.Context, q querier, before time.Time, self string) (int, error) {
	var n int
	if err := q.QueryRow(ctx, expireUnheardSQL, before, store.ExpireBatch, self).Scan(&n); err != nil {
		return 0, dbErr("expire unheard listings", err)
	}
	return n, nil
}
