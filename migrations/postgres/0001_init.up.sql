-- 0001_init: the listing cache and the portal's own data (store/store.go).
-- Applied by golang-migrate as one multi-statement string, so it commits or
-- fails as a whole.

-- agent_search_vector is the full-text document of a listing. The 'simple'
-- configuration (no stemming, no stop words) keeps prefix matching uniform
-- for every language and for slugs; weights rank a hit in the name above one
-- in the tags, and both above the description and skills. IMMUTABLE
-- (array_to_string over text[] is, even if Postgres marks it STABLE for
-- arbitrary element types), so it may feed an index or a generated column.
CREATE FUNCTION agent_search_vector(name text, display_name text, tags text[], description text, skills jsonb)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT setweight(to_tsvector('simple'::regconfig, coalesce(name, '') || ' ' || coalesce(display_name, '')), 'A')
        || setweight(to_tsvector('simple'::regconfig, coalesce(array_to_string(tags, ' '), '')), 'B')
        || setweight(to_tsvector('simple'::regconfig, coalesce(description, '')), 'C')
        || setweight(jsonb_to_tsvector('simple'::regconfig, coalesce(skills, 'null'::jsonb), '["string"]'), 'C')
$$;

-- A listing is two rows. agents is narrow: what search filters, sorts and
-- ranks on, and what heartbeats update. agent_records holds the rest of the
-- record and the envelope, read only for the rows of a page. Measured on
-- 100k listings (storetest.Benchmarks data): with everything in one table a
-- text query matching 20% of the listings read a 150 MB heap and took
-- 130-190 ms; on the narrow table (~70 MB, ~700 bytes a row) 35-55 ms.
--
-- pos is the first-seen order: an insert takes the next identity value, an
-- update (ON CONFLICT DO UPDATE) never touches it, so "newest first" and the
-- keyset cursors are stable. search is agent_search_vector of the record,
-- written by the upsert in the same statement (a generated column cannot read
-- agent_records). tags is NULL when the record had none (nil round-trips as
-- nil). fillfactor leaves room for HOT updates by heartbeats.
CREATE TABLE agents (
    id           text PRIMARY KEY,
    pos          bigint GENERATED ALWAYS AS IDENTITY,
    seq          bigint NOT NULL CHECK (seq >= 0),
    tombstone    boolean NOT NULL DEFAULT false,
    status       text NOT NULL,
    -- visible is what default search, recent, tags and stats show.
    visible      boolean GENERATED ALWAYS AS (NOT tombstone AND status <> 'offline') STORED,
    local        boolean NOT NULL DEFAULT false,
    owner        text NOT NULL DEFAULT '',
    host_peer_id text NOT NULL DEFAULT '',
    tags         text[],
    expires_at   timestamptz NOT NULL,
    last_seen    timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    search       tsvector NOT NULL
) WITH (
    fillfactor = 90,
    -- A cache that churns: keep planner statistics and the visibility map
    -- (index-only counts) fresh sooner than the global defaults would.
    autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);

-- Every text query reads search: keep it inline and uncompressed unless a
-- huge record leaves no choice.
ALTER TABLE agents ALTER COLUMN search SET STORAGE MAIN;

-- agent_records is the rest of the record, one row per agents row.
-- skills/endpoints are NULL when the record had none.
CREATE TABLE agent_records (
    id           text PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
    name         text NOT NULL,
    display_name text NOT NULL DEFAULT '',
    description  text NOT NULL DEFAULT '',
    skills       jsonb,
    endpoints    jsonb,
    version      text NOT NULL DEFAULT '',
    publisher    text NOT NULL DEFAULT '',
    issued_at    timestamptz NOT NULL,
    envelope     bytea
);
-- Signatures do not compress: do not try.
ALTER TABLE agent_records ALTER COLUMN envelope SET STORAGE EXTERNAL;

-- Indexes of agents, checked with EXPLAIN ANALYZE on 100k listings
-- (store/postgres/search.go describes the plans).
CREATE UNIQUE INDEX agents_pos ON agents (pos);
-- Default listing (no text, statuses online+stale): walk pos backwards.
CREATE INDEX agents_visible_pos ON agents (pos) WHERE visible;
-- Explicit status filters, CountByStatus, Stats (index-only).
CREATE INDEX agents_status_pos ON agents (status, pos) WHERE NOT tombstone;
-- "My agents" on the account page.
CREATE INDEX agents_owner_pos ON agents (owner, pos);
-- Heartbeats: SetHostStatus.
CREATE INDEX agents_host ON agents (host_peer_id) WHERE status <> 'offline';
-- ExpireListings.
CREATE INDEX agents_expires ON agents (expires_at) WHERE status <> 'offline';
-- ListLocal.
CREATE INDEX agents_local ON agents (pos) WHERE local AND NOT tombstone;
-- Text search.
CREATE INDEX agents_search ON agents USING gin (search);
-- Tag filters (tags @> $1): for a rare tag whose listings are old; common
-- tags are cheaper to filter while walking agents_visible_pos.
CREATE INDEX agents_tags ON agents USING gin (tags);

-- agent_tags has one row per (listing, tag) with the listing's visibility
-- copied in, so tag counts (ListTags, Stats) are an index-only scan of
-- agent_tags_visible instead of a join with agents. The store rewrites it
-- with the listing, and updates visible in the same statement as any status
-- change (UpsertRecord, SetHostStatus, ExpireListings).
CREATE TABLE agent_tags (
    agent_id text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    tag      text NOT NULL,
    visible  boolean NOT NULL,
    PRIMARY KEY (agent_id, tag)
) WITH (
    autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
CREATE INDEX agent_tags_visible ON agent_tags (tag) WHERE visible;

-- agent_backends holds how this node answers its local agents (secrets
-- included). No foreign key: a backend is stored before the signed record
-- comes back through the Sink.
CREATE TABLE agent_backends (
    agent_id   text PRIMARY KEY,
    config     jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE nodes (
    peer_id        text PRIMARY KEY,
    addrs          text[],
    version        text NOT NULL DEFAULT '',
    agents_hosted  integer NOT NULL DEFAULT 0,
    load           double precision NOT NULL DEFAULT 0,
    last_heartbeat timestamptz NOT NULL,
    status         text NOT NULL
);

CREATE TABLE users (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    handle        text NOT NULL,
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
-- Handles are unique case-insensitively.
CREATE UNIQUE INDEX users_handle_lower ON users (lower(handle));

-- sessions backs the web session manager (scs).
CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expiry);

-- api_tokens stores only the sha256 of each personal token.
CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL,
    hash         bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz
);
CREATE INDEX api_tokens_user ON api_tokens (user_id, id);

-- conversations.agent_id has no foreign key: chats may outlive a listing.
CREATE TABLE conversations (
    id         text PRIMARY KEY,
    agent_id   text NOT NULL,
    owner_key  text NOT NULL,
    title      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX conversations_owner ON conversations (owner_key, updated_at DESC, id DESC);

CREATE TABLE messages (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role            text NOT NULL,
    text            text NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX messages_conversation ON messages (conversation_id, id);
