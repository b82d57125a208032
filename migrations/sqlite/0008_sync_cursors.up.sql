-- 0008: incremental, resumable catalogue sync (issue 20).
--
-- agent_sync numbers every listing's envelope for sync, as agent_changes
-- (0006) numbers what the search index holds: each insert of a listing and
-- each new seq (a new signed envelope: an update, a delete, a re-sign) gives
-- the row a number larger than any before. Status and health changes give
-- none, so a host going stale and back makes no peer pull its listings
-- again; a re-sign does, so a listing whose update was lost in gossip
-- reaches every mirror by sync. A table of its own, written only on a new
-- seq. SQLite has one writer at a time, so max + 1 is in commit order.
CREATE TABLE IF NOT EXISTS agent_sync (
    pos      INTEGER PRIMARY KEY REFERENCES agents (pos) ON DELETE CASCADE,
    sync_seq INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS agent_sync_seq ON agent_sync (sync_seq);

-- Existing rows, in first-seen order. (Every statement here may run again
-- on a database migrated down below 0006 and up: the tests do.)
INSERT OR IGNORE INTO agent_sync (pos, sync_seq) SELECT pos, pos FROM agents ORDER BY pos;

CREATE TRIGGER IF NOT EXISTS agents_sync_insert AFTER INSERT ON agents
BEGIN
    INSERT INTO agent_sync (pos, sync_seq)
    VALUES (new.pos, (SELECT coalesce(max(sync_seq), 0) + 1 FROM agent_sync))
    ON CONFLICT (pos) DO UPDATE SET sync_seq = excluded.sync_seq;
END;

CREATE TRIGGER IF NOT EXISTS agents_sync_update AFTER UPDATE OF seq ON agents
WHEN old.seq IS NOT new.seq
BEGIN
    INSERT INTO agent_sync (pos, sync_seq)
    VALUES (new.pos, (SELECT coalesce(max(sync_seq), 0) + 1 FROM agent_sync))
    ON CONFLICT (pos) DO UPDATE SET sync_seq = excluded.sync_seq;
END;

-- sync_feed names this database's change feed (agent_changes, 0006): a
-- peer keeps a cursor in our feed, and a feed id it does not know (a
-- database wiped and made again) tells it its cursor means nothing here.
CREATE TABLE IF NOT EXISTS sync_feed (id TEXT NOT NULL);
INSERT INTO sync_feed (id) SELECT lower(hex(randomblob(16))) WHERE NOT EXISTS (SELECT 1 FROM sync_feed);

-- sync_cursors is where this node got to in each peer's feed, per shard of
-- the id space (p2p/sync_feed.go): the change number to continue after,
-- and whether the shard was once pulled to its end (complete). The row of
-- peer '' holds no position: it says that some peer's shard is complete.
CREATE TABLE IF NOT EXISTS sync_cursors (
    peer_id    TEXT NOT NULL,
    shard      INTEGER NOT NULL,
    feed       TEXT NOT NULL,
    after_seq  INTEGER NOT NULL,
    complete   INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (peer_id, shard)
) WITHOUT ROWID;
