package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/agentsite/agentsite/store"
)

// listingColumns is what scanListing reads, in order; queries select it from
// agents aliased as a.
const listingColumns = `a.id, a.name, a.display_name, a.description, a.tags, a.skills, a.endpoints,
	a.version, a.publisher, a.owner, a.seq, a.issued_at, a.expires_at, a.tombstone,
	a.envelope, a.status, a.last_seen, a.host_peer_id, a.local, a.updated_at, a.pos,
	a.health_state, a.health_latency_ms, a.health_success_rate, a.health_last_ok_at, a.health_checked_at,
	` + usesColumn

// usesColumn is an agent's uses over the week (agent_uses, migration
// 0014): a probe of its primary key, 0 without a row.
const usesColumn = `coalesce((SELECT u.uses_7d FROM agent_uses u WHERE u.agent_pos = a.pos), 0)`

// publicColumns is listingColumns for a store.SearchQuery.PublicOnly
// search, followed by public_json: the columns that public_json holds are
// read only for a row written before it existed, and the envelope not at
// all.
const publicColumns = `a.id, a.name, a.display_name,
	CASE WHEN a.public_json IS NULL THEN a.description ELSE '' END, a.tags,
	CASE WHEN a.public_json IS NULL THEN a.skills END,
	CASE WHEN a.public_json IS NULL THEN a.endpoints END,
	a.version, a.publisher, a.owner, a.seq, a.issued_at, a.expires_at, a.tombstone,
	NULL, a.status, a.last_seen, a.host_peer_id, a.local, a.updated_at, a.pos,
	a.health_state, a.health_latency_ms, a.health_success_rate, a.health_last_ok_at, a.health_checked_at,
	` + usesColumn + `, a.public_json`

// upsertAgentSQL inserts a listing or replaces it when the incoming seq is
// newer. The WHERE of DO UPDATE makes the seq rule atomic: a stale record
// updates nothing and RETURNING yields no row. pos is never updated, so a
// listing keeps its first-seen place.
const upsertAgentSQL = `-- name: upsert_record
INSERT INTO agents (id, name, display_name, description, tags, skills, skills_text, endpoints,
	version, publisher, owner, seq, issued_at, expires_at, tombstone,
	envelope, status, last_seen, host_peer_id, local, updated_at, public_json)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	name = excluded.name, display_name = excluded.display_name,
	description = excluded.description, tags = excluded.tags,
	skills = excluded.skills, skills_text = excluded.skills_text,
	endpoints = excluded.endpoints, version = excluded.version,
	publisher = excluded.publisher, owner = excluded.owner, seq = excluded.seq,
	issued_at = excluded.issued_at, expires_at = excluded.expires_at,
	tombstone = excluded.tombstone, envelope = excluded.envelope,
	status = excluded.status, last_seen = excluded.last_seen,
	host_peer_id = excluded.host_peer_id, local = excluded.local,
	updated_at = excluded.updated_at, public_json = excluded.public_json
WHERE excluded.seq > agents.seq
RETURNING pos`

const (
	deleteTagsSQL = `-- name: delete_tags
DELETE FROM agent_tags WHERE agent_pos = ?`
	insertTagsSQL = `-- name: insert_tags
INSERT OR IGNORE INTO agent_tags (tag, agent_pos) SELECT value, ? FROM json_each(?)`
)

// UpsertRecord implements store.Catalogue: the listing row (whose triggers
// update the full-text index and the tag counts) and its tag rows change in
// one write transaction, or not at all. A tombstone keeps its tag rows (they
// count for nothing, tag_counts only counts visible listings), so a sync by
// tag serves the delete too.
func (db *DB) UpsertRecord(ctx context.Context, l store.Listing) error {
	return db.upsertRecord(ctx, pooled{db}, l)
}

// upsertRecord is UpsertRecord through w: the row and its tags together
// (w.atomic).
func (db *DB) upsertRecord(ctx context.Context, w writer, l store.Listing) error {
	r := &l.Record
	args, tags, err := upsertArgs(l)
	if err != nil {
		return err
	}
	return w.atomic(ctx, func(ctx context.Context, tx execer) error {
		var pos int64
		err := tx.QueryRowContext(ctx, upsertAgentSQL, args...).Scan(&pos)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: upsert agent %s seq %d: %w", r.ID, r.Seq, store.ErrStale)
		}
		if err != nil {
			return dbErr("upsert agent "+r.ID, err)
		}
		if _, err := tx.ExecContext(ctx, deleteTagsSQL, pos); err != nil {
			return dbErr("rewrite tags of agent "+r.ID, err)
		}
		if len(r.Tags) == 0 {
			return nil
		}
		_, err = tx.ExecContext(ctx, insertTagsSQL, pos, tags)
		return dbErr("rewrite tags of agent "+r.ID, err)
	}, upsertAgentSQL, deleteTagsSQL, insertTagsSQL)
}

// upsertArgs is l as the arguments of upsertAgentSQL, and its tags as
// JSON (nil without tags).
func upsertArgs(l store.Listing) (args []any, tags any, err error) {
	r := &l.Record
	if r.ID == "" {
		return nil, nil, errors.New("sqlite: upsert agent: empty id")
	}
	if r.Seq > math.MaxInt64 {
		return nil, nil, fmt.Errorf("sqlite: upsert agent %s: seq %d is out of range (max %d)", r.ID, r.Seq, int64(math.MaxInt64))
	}
	tags, err = jsonOrNull(r.Tags)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: upsert agent %s: encode tags: %w", r.ID, err)
	}
	skills, err := jsonOrNull(r.Skills)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: upsert agent %s: encode skills: %w", r.ID, err)
	}
	endpoints, err := jsonOrNull(r.Endpoints)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: upsert agent %s: encode endpoints: %w", r.ID, err)
	}
	public, err := store.PublicRecordJSON(r)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: upsert agent %s: %w", r.ID, err)
	}
	return []any{
		r.ID, r.Name, r.DisplayName, r.Description, tags, skills, store.SkillsText(r.Skills), endpoints,
		r.Version, r.Publisher, r.Owner, int64(r.Seq), nanos(r.IssuedAt), nanos(r.ExpiresAt), boolInt(r.Tombstone),
		l.Envelope, l.Status, nanos(l.LastSeen), l.HostPeerID, boolInt(l.Local), nanos(l.UpdatedAt), public,
	}, tags, nil
}

// jsonOrNull encodes a slice as JSON, or NULL when it is nil, so nil and
// empty slices both round-trip.
func jsonOrNull[T any](s []T) (any, error) {
	if s == nil {
		return nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// GetAgent implements store.Catalogue.
func (db *DB) GetAgent(ctx context.Context, id string) (store.Listing, error) {
	row := db.r.QueryRowContext(ctx, `-- name: get_agent
SELECT `+listingColumns+` FROM agents a WHERE a.id = ?`, id)
	l, _, err := scanListing(row)
	if err != nil {
		return store.Listing{}, dbErr("get agent "+id, err)
	}
	return l, nil
}

var _ store.AgentsGetter = (*DB)(nil)

// GetAgents implements store.AgentsGetter: one query, the ids passed as
// one JSON array.
func (db *DB) GetAgents(ctx context.Context, ids []string) ([]store.Listing, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("encode ids: %w", err)
	}
	return queryListings(ctx, db.r, "get agents", `-- name: get_agents
SELECT `+listingColumns+` FROM agents a WHERE a.id IN (SELECT value FROM json_each(?))`, string(list))
}

// RecentAgents implements store.Catalogue: a backward walk of the rowid.
func (db *DB) RecentAgents(ctx context.Context, limit int) ([]store.Listing, error) {
	return queryListings(ctx, db.r, "recent agents", `-- name: recent_agents
SELECT `+listingColumns+` FROM agents a
WHERE a.tombstone = 0 AND a.status IN ('online', 'stale')
ORDER BY a.pos DESC LIMIT ?`, store.NormalizeLimit(limit))
}

// ListLocal implements store.Catalogue, in first-seen order.
func (db *DB) ListLocal(ctx context.Context) ([]store.Listing, error) {
	return queryListings(ctx, db.r, "list local agents", `-- name: list_local
SELECT `+listingColumns+` FROM agents a
WHERE a.local = 1 AND a.tombstone = 0
ORDER BY a.pos`)
}
