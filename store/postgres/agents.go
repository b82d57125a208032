package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

// listingColumns is what scanListing reads, in order, from listingFrom.
const listingColumns = `a.id, r.name, r.display_name, r.description, a.tags, r.skills, r.endpoints,
	r.version, r.publisher, a.owner, a.seq, r.issued_at, a.expires_at, a.tombstone,
	r.envelope, a.status, a.last_seen, a.host_peer_id, a.local, a.updated_at, a.pos,
	a.health_state, a.health_latency_ms, a.health_success_rate, a.health_last_ok_at, a.health_checked_at,
	a.health_uses_7d`

// publicColumns is listingColumns for a store.SearchQuery.PublicOnly search:
// the columns that r.public_json holds are read only for a row written
// before it existed, and the envelope not at all.
const publicColumns = `a.id, r.name, r.display_name,
	CASE WHEN r.public_json IS NULL THEN r.description ELSE '' END, a.tags,
	CASE WHEN r.public_json IS NULL THEN r.skills END,
	CASE WHEN r.public_json IS NULL THEN r.endpoints END,
	r.version, r.publisher, a.owner, a.seq, r.issued_at, a.expires_at, a.tombstone,
	NULL::bytea, a.status, a.last_seen, a.host_peer_id, a.local, a.updated_at, a.pos,
	a.health_state, a.health_latency_ms, a.health_success_rate, a.health_last_ok_at, a.health_checked_at,
	a.health_uses_7d`

// agentColumns are the columns of agents that listingColumns reads, for a
// subquery standing in for agents a.
const agentColumns = `a.id, a.pos, a.tags, a.owner, a.seq, a.expires_at, a.tombstone,
	a.status, a.last_seen, a.host_peer_id, a.local, a.updated_at,
	a.health_state, a.health_latency_ms, a.health_success_rate, a.health_last_ok_at, a.health_checked_at,
	a.health_uses_7d`

// listingFrom joins the two halves of a listing (see the migration).
const listingFrom = `agents a JOIN agent_records r ON r.id = a.id`

// The fragments below are the parts of upsertAgentSQL and rewriteTagsSQL
// that upsertPageSQL (agents_page.go) repeats for a page of listings:
// built from the same constants, the two statements write the same
// columns under the same rules.

// insertAgents is the head of the upsert into agents: its values are the
// row's columns in agentArgs' order, then its three search vectors.
const insertAgents = `INSERT INTO agents AS a (id, seq, tombstone, status, local, owner, host_peer_id, tags,
		expires_at, last_seen, updated_at, search, search_title, search_head)`

// onConflictAgents is the seq rule of the upsert into agents: a newer seq
// replaces the row (all but pos, the first-seen order), a stale one
// changes nothing and returns nothing. It returns the id and visibility
// of each row written.
const onConflictAgents = `ON CONFLICT (id) DO UPDATE SET
		seq = excluded.seq, tombstone = excluded.tombstone, status = excluded.status,
		local = excluded.local, owner = excluded.owner, host_peer_id = excluded.host_peer_id,
		tags = excluded.tags, expires_at = excluded.expires_at, last_seen = excluded.last_seen,
		updated_at = excluded.updated_at, search = excluded.search,
		search_title = excluded.search_title, search_head = excluded.search_head
	WHERE a.seq < excluded.seq
	RETURNING a.id, a.visible`

// insertRecords is the head of the upsert into agent_records, selecting
// from the rows that onConflictAgents returned.
const insertRecords = `INSERT INTO agent_records AS r (id, name, display_name, description, skills, endpoints,
		version, publisher, issued_at, envelope, public_json)`

// onConflictRecords replaces a record: the seq rule was applied to agents.
const onConflictRecords = `ON CONFLICT (id) DO UPDATE SET
		name = excluded.name, display_name = excluded.display_name,
		description = excluded.description, skills = excluded.skills,
		endpoints = excluded.endpoints, version = excluded.version,
		publisher = excluded.publisher, issued_at = excluded.issued_at,
		envelope = excluded.envelope, public_json = excluded.public_json`

// insertTags is the head of the insert of a listing's tags.
const insertTags = `INSERT INTO agent_tags (agent_id, tag, visible)`

// onConflictTags refreshes visible on a kept tag, touching it only when it
// changed.
const onConflictTags = `ON CONFLICT (agent_id, tag) DO UPDATE SET visible = excluded.visible
	WHERE agent_tags.visible <> excluded.visible`

// upsertAgentSQL inserts a listing or replaces it when the incoming seq is
// newer. The WHERE of the upsert into agents makes the seq rule atomic: a
// stale record changes no row and the statement returns nothing; otherwise
// agent_records follows in the same statement. pos is never updated: it is
// first-seen order. Returns the listing's visibility for agent_tags.
const upsertAgentSQL = `-- name: upsert_record
WITH up AS (
	` + insertAgents + `
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text[], $9, $10, $11,
		agent_search_vector($12, $13, $8::text[], $14, $15::jsonb),
		to_tsvector('simple'::regconfig, $12::text || ' ' || $13::text),
		to_tsvector('simple'::regconfig, $12::text || ' ' || $13::text)
			|| to_tsvector('simple'::regconfig, coalesce(array_to_string($8::text[], ' '), '')))
	` + onConflictAgents + `
), rec AS (
	` + insertRecords + `
	SELECT id, $12, $13, $14, $15::jsonb, $16::jsonb, $17, $18, $19, $20, $21 FROM up
	` + onConflictRecords + `
)
SELECT visible FROM up`

// rewriteTagsSQL makes agent_tags equal to tags $2 of agent $1, with the
// listing's visibility $3: the CTE drops the tags that went, the insert adds
// the new ones and refreshes visible on the kept ones. The two touch
// disjoint rows, so one statement suffices.
const rewriteTagsSQL = `-- name: rewrite_tags
WITH dropped AS (
	DELETE FROM agent_tags WHERE agent_id = $1 AND tag <> ALL ($2::text[])
)
` + insertTags + `
SELECT DISTINCT $1, t, $3::boolean FROM unnest($2::text[]) AS t
` + onConflictTags

// syncTagVisibility is appended to a status UPDATE ... RETURNING id,
// visible (the CTE "changed") so agent_tags.visible follows in the same
// statement; the statement returns how many listings changed.
const syncTagVisibility = `
), synced AS (
	UPDATE agent_tags t SET visible = c.visible
	FROM changed c
	WHERE t.agent_id = c.id AND t.visible <> c.visible
)
SELECT count(*) FROM changed`

// UpsertRecord implements store.Catalogue.
func (db *DB) UpsertRecord(ctx context.Context, l store.Listing) error {
	return upsertRecord(ctx, pooled{db}, l)
}

// upsertRecord is UpsertRecord through ex: the listing and its tags
// together (ex.atomic).
func upsertRecord(ctx context.Context, ex executor, l store.Listing) error {
	r := &l.Record
	args, err := agentArgs(&l)
	if err != nil {
		return err
	}
	return ex.atomic(ctx, func(ctx context.Context, tx querier) error {
		var visible bool
		err := tx.QueryRow(ctx, upsertAgentSQL, args...).Scan(&visible)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("postgres: upsert agent %s seq %d: %w", r.ID, r.Seq, store.ErrStale)
		}
		if err != nil {
			return dbErr("upsert agent "+r.ID, err)
		}
		tags := r.Tags
		if tags == nil {
			tags = []string{}
		}
		if _, err := tx.Exec(ctx, rewriteTagsSQL, r.ID, tags, visible); err != nil {
			return dbErr("rewrite tags of agent "+r.ID, err)
		}
		return nil
	})
}

// agentArgs is a listing's row as the arguments of upsertAgentSQL (and
// of each row of a page's statement), in its columns' order.
func agentArgs(l *store.Listing) ([]any, error) {
	r := &l.Record
	if r.Seq > math.MaxInt64 {
		return nil, fmt.Errorf("postgres: upsert agent %s: seq %d is out of range", r.ID, r.Seq)
	}
	skills, err := json.Marshal(r.Skills)
	if err != nil {
		return nil, fmt.Errorf("postgres: upsert agent %s: encode skills: %w", r.ID, err)
	}
	endpoints, err := json.Marshal(r.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("postgres: upsert agent %s: encode endpoints: %w", r.ID, err)
	}
	public, err := store.PublicRecordJSON(r)
	if err != nil {
		return nil, fmt.Errorf("postgres: upsert agent %s: %w", r.ID, err)
	}
	return []any{
		r.ID, int64(r.Seq), r.Tombstone, l.Status, l.Local, r.Owner, l.HostPeerID, r.Tags,
		r.ExpiresAt, l.LastSeen, l.UpdatedAt,
		r.Name, r.DisplayName, r.Description, skills, endpoints, r.Version, r.Publisher,
		r.IssuedAt, l.Envelope, public,
	}, nil
}

// GetAgent implements store.Catalogue.
func (db *DB) GetAgent(ctx context.Context, id string) (store.Listing, error) {
	return getAgent(ctx, db.q, id)
}

func getAgent(ctx context.Context, q querier, id string) (store.Listing, error) {
	row := q.QueryRow(ctx, `-- name: get_agent
SELECT `+listingColumns+` FROM `+listingFrom+` WHERE a.id = $1`, id)
	l, _, err := scanListing(row)
	if err != nil {
		return store.Listing{}, dbErr("get agent "+id, err)
	}
	return l, nil
}

var _ store.AgentsGetter = (*DB)(nil)

// GetAgents implements store.AgentsGetter: one query.
func (db *DB) GetAgents(ctx context.Context, ids []string) ([]store.Listing, error) {
	return getAgents(ctx, db.q, ids)
}

func getAgents(ctx context.Context, q querier, ids []string) ([]store.Listing, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return queryListings(ctx, q, "get agents", `-- name: get_agents
SELECT `+listingColumns+` FROM `+listingFrom+` WHERE a.id = ANY($1)`, ids)
}

// RecentAgents implements store.Catalogue.
func (db *DB) RecentAgents(ctx context.Context, limit int) ([]store.Listing, error) {
	return queryListings(ctx, db.q, "recent agents",
		`-- name: recent_agents
SELECT `+listingColumns+` FROM `+listingFrom+` WHERE a.visible ORDER BY a.pos DESC LIMIT $1`,
		store.NormalizeLimit(limit))
}

// ListLocal implements store.Catalogue.
func (db *DB) ListLocal(ctx context.Context) ([]store.Listing, error) {
	return queryListings(ctx, db.q, "list local agents",
		`-- name: list_local
SELECT `+listingColumns+` FROM `+listingFrom+` WHERE a.local AND NOT a.tombstone ORDER BY a.pos`)
}

// CountByStatus implements store.Catalogue.
func (db *DB) CountByStatus(ctx context.Context) (map[string]int, error) {
	return db.countBy(ctx, "count by status", `-- name: count_by_status
SELECT status, count(*) FROM agents WHERE NOT tombstone GROUP BY status`)
}

// countBy runs query, which answers (key, count) rows, into a map; op
// names it in errors.
func (db *DB) countBy(ctx context.Context, op, query string) (map[string]int, error) {
	rows, err := db.q.Query(ctx, query)
	if err != nil {
		return nil, dbErr(op, err)
	}
	out := map[string]int{}
	var (
		key string
		n   int
	)
	if _, err := pgx.ForEachRow(rows, []any{&key, &n}, func() error {
		out[key] = n
		return nil
	}); err != nil {
		return nil, dbErr(op, err)
	}
	return out, nil
}

// SetHostStatus implements store.Catalogue.
func (db *DB) SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error) {
	return setHostStatus(ctx, db.q, hostPeerID, status, lastSeen)
}

// setHostStatus is SetHostStatus on q (the pool, or a batch: HeardAll).
func setHostStatus(ctx context.Context, q querier, hostPeerID, status string, lastSeen time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, `-- name: set_host_status
WITH changed AS (
	UPDATE agents SET status = $2,
		last_seen = CASE WHEN $2 = 'online' THEN $3 ELSE last_seen END
	WHERE host_peer_id = $1 AND status <> 'offline'
	RETURNING id, visible`+syncTagVisibility, hostPeerID, status, lastSeen).Scan(&n)
	if err != nil {
		return 0, dbErr("set status of host "+hostPeerID, err)
	}
	return n, nil
}

// ExpireListings implements store.Catalogue.
func (db *DB) ExpireListings(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := db.q.QueryRow(ctx, `-- name: expire_listings
WITH changed AS (
	UPDATE agents SET status = 'offline'
	WHERE expires_at <= $1 AND status <> 'offline'
	RETURNING id, visible`+syncTagVisibility, now).Scan(&n)
	if err != nil {
		return 0, dbErr("expire listings", err)
	}
	return n, nil
}

// queryListings runs a query selecting listingColumns.
func queryListings(ctx context.Context, q querier, op, sql string, args ...any) ([]store.Listing, error) {
	rows, err := q.Query(ctx, sql, args...)
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

// scanListing reads listingColumns (plus any extra destinations, e.g. a
// rank) and returns the listing and its pos.
func scanListing(row pgx.Row, extra ...any) (store.Listing, int64, error) {
	var (
		l                   store.Listing
		r                   = &l.Record
		skills, endpoints   []byte
		seq, pos            int64
		issued, expires     time.Time
		lastSeen, updatedAt time.Time
		lastOK, checked     *time.Time
	)
	h := &l.Health
	dest := []any{&r.ID, &r.Name, &r.DisplayName, &r.Description, &r.Tags, &skills, &endpoints,
		&r.Version, &r.Publisher, &r.Owner, &seq, &issued, &expires, &r.Tombstone,
		&l.Envelope, &l.Status, &lastSeen, &l.HostPeerID, &l.Local, &updatedAt, &pos,
		&h.State, &h.LatencyMS, &h.SuccessRate, &lastOK, &checked, &h.Uses7d}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return store.Listing{}, 0, err
	}
	r.Seq = uint64(seq)
	r.IssuedAt, r.ExpiresAt = issued.UTC(), expires.UTC()
	l.LastSeen, l.UpdatedAt = lastSeen.UTC(), updatedAt.UTC()
	h.LastOKAt, h.CheckedAt = utc(lastOK), utc(checked)
	if err := decodeJSON(skills, &r.Skills); err != nil {
		return store.Listing{}, 0, fmt.Errorf("decode skills of agent %s: %w", r.ID, err)
	}
	if err := decodeJSON(endpoints, &r.Endpoints); err != nil {
		return store.Listing{}, 0, fmt.Errorf("decode endpoints of agent %s: %w", r.ID, err)
	}
	return l, pos, nil
}

func decodeJSON[T any](b []byte, dst *[]T) error {
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, dst)
}
