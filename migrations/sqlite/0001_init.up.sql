-- 0001_init: the listing cache and the portal's own data (store/store.go),
-- SQLite flavour. golang-migrate runs this file in one transaction.
--
-- Conventions: times are INTEGER unix nanoseconds, UTC (NULL where the Go
-- value may be the zero time); booleans are INTEGER 0/1; JSON is TEXT.

-- agents is one row per listing ever heard of, tombstones included (an older
-- seq must never resurrect a deleted agent). pos is the rowid and the
-- first-seen order: AUTOINCREMENT never hands out a value that was used
-- before, an upsert's DO UPDATE never touches it, so "newest first" and the
-- keyset cursors stay stable.
CREATE TABLE agents (
    pos          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT    NOT NULL UNIQUE,
    name         TEXT    NOT NULL,
    display_name TEXT    NOT NULL DEFAULT '',
    description  TEXT    NOT NULL DEFAULT '',
    version      TEXT    NOT NULL DEFAULT '',
    publisher    TEXT    NOT NULL DEFAULT '',
    owner        TEXT    NOT NULL DEFAULT '',
    tags         TEXT,                          -- JSON array; NULL when the record had none
    skills       TEXT,                          -- JSON; NULL when the record had none
    skills_text  TEXT    NOT NULL DEFAULT '',   -- skills flattened for full-text search
    endpoints    TEXT,                          -- JSON; NULL when the record had none
    host_peer_id TEXT    NOT NULL DEFAULT '',
    seq          INTEGER NOT NULL CHECK (seq >= 0),
    issued_at    INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    tombstone    INTEGER NOT NULL DEFAULT 0 CHECK (tombstone IN (0, 1)),
    status       TEXT    NOT NULL CHECK (status IN ('online', 'stale', 'offline')),
    last_seen    INTEGER,
    local        INTEGER NOT NULL DEFAULT 0 CHECK (local IN (0, 1)),
    updated_at   INTEGER,
    envelope     BLOB
);

-- Every index ends with the rowid (pos), so an equality on its columns plus
-- ORDER BY pos DESC is a backward index walk that stops at LIMIT.
CREATE INDEX agents_owner ON agents (owner);                          -- owner filter
CREATE INDEX agents_host ON agents (host_peer_id);                    -- SetHostStatus
CREATE INDEX agents_expires ON agents (expires_at) WHERE status <> 'offline'; -- ExpireListings
CREATE INDEX agents_local ON agents (local) WHERE local = 1;          -- ListLocal

-- status_counts is how many non-tombstoned listings have each status, for
-- Stats (the overview page) and CountByStatus (metrics): counting an index
-- on (tombstone, status) took 10 ms at 100k listings. Kept by the triggers
-- below; n = the non-tombstoned rows of agents with that status.
CREATE TABLE status_counts (
    status TEXT    PRIMARY KEY,
    n      INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER agents_status_count_insert AFTER INSERT ON agents WHEN new.tombstone = 0
BEGIN
    INSERT INTO status_counts (status, n) VALUES (new.status, 1)
    ON CONFLICT (status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER agents_status_count_update AFTER UPDATE OF status, tombstone ON agents
WHEN old.status IS NOT new.status OR old.tombstone IS NOT new.tombstone
BEGIN
    UPDATE status_counts SET n = n - 1 WHERE status = old.status AND old.tombstone = 0;
    INSERT INTO status_counts (status, n) SELECT new.status, 1 WHERE new.tombstone = 0
    ON CONFLICT (status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER agents_status_count_delete AFTER DELETE ON agents WHEN old.tombstone = 0
BEGIN
    UPDATE status_counts SET n = n - 1 WHERE status = old.status;
END;

-- agent_tags mirrors the tags of every listing for tag filters, tag counts
-- and sync by tag. It is keyed by (tag, agent_pos) so "tag X, newest first" is a
-- backward walk of the primary key; rewritten with the listing in the same
-- transaction.
CREATE TABLE agent_tags (
    tag       TEXT    NOT NULL,
    agent_pos INTEGER NOT NULL REFERENCES agents (pos) ON DELETE CASCADE,
    PRIMARY KEY (tag, agent_pos)
) WITHOUT ROWID;
CREATE INDEX agent_tags_agent ON agent_tags (agent_pos);

-- tag_counts is how many visible listings (not tombstoned, not offline)
-- carry each tag: ListTags and Stats read it instead of grouping agent_tags
-- (330 ms at 100k listings; see store/sqlite/bench_test.go). The triggers
-- keep one invariant, whatever the order of the writes: n = the tag rows of
-- the tag whose listing is visible. Adding or removing a tag row of a
-- visible listing moves n by one; a listing turning visible or hidden moves
-- n for each of its tag rows.
CREATE TABLE tag_counts (
    tag TEXT    PRIMARY KEY,
    n   INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER agent_tags_count_insert AFTER INSERT ON agent_tags
WHEN (SELECT tombstone = 0 AND status <> 'offline' FROM agents WHERE pos = new.agent_pos)
BEGIN
    INSERT INTO tag_counts (tag, n) VALUES (new.tag, 1)
    ON CONFLICT (tag) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER agent_tags_count_delete AFTER DELETE ON agent_tags
WHEN (SELECT tombstone = 0 AND status <> 'offline' FROM agents WHERE pos = old.agent_pos)
BEGIN
    UPDATE tag_counts SET n = n - 1 WHERE tag = old.tag;
END;

CREATE TRIGGER agents_visibility_counts AFTER UPDATE OF status, tombstone ON agents
WHEN (old.tombstone = 0 AND old.status <> 'offline') <> (new.tombstone = 0 AND new.status <> 'offline')
BEGIN
    INSERT INTO tag_counts (tag, n)
    SELECT tag, 1 FROM agent_tags WHERE agent_pos = new.pos AND new.tombstone = 0 AND new.status <> 'offline'
    ON CONFLICT (tag) DO UPDATE SET n = n + 1;
    UPDATE tag_counts SET n = n - 1
    WHERE (old.tombstone = 0 AND old.status <> 'offline')
      AND tag IN (SELECT tag FROM agent_tags WHERE agent_pos = old.pos);
END;

-- Rows of agents are never deleted by the store; if one is by hand, its tag
-- rows go first so the counts follow.
CREATE TRIGGER agents_delete_tags BEFORE DELETE ON agents
BEGIN
    DELETE FROM agent_tags WHERE agent_pos = old.pos;
END;

-- agents_fts is the full-text index of non-tombstoned listings, rowid = pos.
-- Contentless (the text lives in agents) with contentless_delete, so the
-- triggers below can drop a row by rowid alone. The tags column is fed the
-- JSON array as is: tags are slugs, and the tokenizer treats the JSON
-- punctuation (and the slugs' hyphens) as separators. The prefix indexes make
-- the short prefixes of search-as-you-type ("we", "wea") cheap.
CREATE VIRTUAL TABLE agents_fts USING fts5 (
    name, display_name, tags, skills, description,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);

CREATE TRIGGER agents_fts_insert AFTER INSERT ON agents WHEN new.tombstone = 0
BEGIN
    INSERT INTO agents_fts (rowid, name, display_name, tags, skills, description)
    VALUES (new.pos, new.name, new.display_name, new.tags, new.skills_text, new.description);
END;

-- Status changes (heartbeats, expiry) do not touch the indexed columns, so
-- they do not fire this trigger.
CREATE TRIGGER agents_fts_update
AFTER UPDATE OF name, display_name, description, tags, skills_text, tombstone ON agents
BEGIN
    DELETE FROM agents_fts WHERE rowid = old.pos;
    INSERT INTO agents_fts (rowid, name, display_name, tags, skills, description)
    SELECT new.pos, new.name, new.display_name, new.tags, new.skills_text, new.description
    WHERE new.tombstone = 0;
END;

CREATE TRIGGER agents_fts_delete AFTER DELETE ON agents
BEGIN
    DELETE FROM agents_fts WHERE rowid = old.pos;
END;

-- agent_backends holds how this node answers its local agents, secrets
-- included. No foreign key: a backend is stored before the signed record
-- comes back through the Sink.
CREATE TABLE agent_backends (
    agent_id   TEXT    PRIMARY KEY,
    config     TEXT    NOT NULL, -- JSON of agent.Backend
    updated_at INTEGER NOT NULL
);

CREATE TABLE nodes (
    peer_id        TEXT    PRIMARY KEY,
    addrs          TEXT,                       -- JSON array; NULL when none
    version        TEXT    NOT NULL DEFAULT '',
    agents_hosted  INTEGER NOT NULL DEFAULT 0,
    load           REAL    NOT NULL DEFAULT 0,
    last_heartbeat INTEGER,
    status         TEXT    NOT NULL
);

-- Handles are unique case-insensitively (ASCII; handles are slugs).
CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    handle        TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT    NOT NULL,
    created_at    INTEGER NOT NULL
);

-- sessions backs the web session manager (scs).
CREATE TABLE sessions (
    token  TEXT    PRIMARY KEY,
    data   BLOB    NOT NULL,
    expiry INTEGER NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expiry);

-- api_tokens stores only the sha256 of each personal token.
CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    hash         BLOB    NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER
);
CREATE INDEX api_tokens_user ON api_tokens (user_id);

-- conversations.agent_id has no foreign key: chats may outlive a listing.
CREATE TABLE conversations (
    id         TEXT    PRIMARY KEY,
    agent_id   TEXT    NOT NULL,
    owner_key  TEXT    NOT NULL,
    title      TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX conversations_owner ON conversations (owner_key, updated_at);

CREATE TABLE messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role            TEXT    NOT NULL,
    text            TEXT    NOT NULL,
    created_at      INTEGER NOT NULL
);
CREATE INDEX messages_conversation ON messages (conversation_id, id);
