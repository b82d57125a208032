-- 0010: the node's capacity (--max-listings, issue 20). At capacity a new
-- network listing makes room by deleting held ones (store.Evictor), so a
-- listing can now leave the agents table, and the feeds must say so.
--
-- agent_changes (0006) keeps the row of a deleted listing: the delete
-- gives it a new change number and gone_at (unix seconds), and
-- ListingChanges reports it as a tombstone, so the search index drops the
-- listing. Without the foreign key's cascade the row went with the
-- listing: the index never learnt of it, and the next max + 1 could hand
-- out the number of the row that went, below what the index had read. The
-- eviction prunes rows gone for ten minutes, never the largest number.
DROP TRIGGER IF EXISTS agents_change_insert;
DROP TRIGGER IF EXISTS agents_change_update;
DROP TRIGGER IF EXISTS agents_change_delete;
DROP TABLE IF EXISTS agent_changes_new;
CREATE TABLE agent_changes_new (
    pos        INTEGER PRIMARY KEY,
    change_seq INTEGER NOT NULL,
    gone_at    INTEGER
);
INSERT INTO agent_changes_new (pos, change_seq) SELECT pos, change_seq FROM agent_changes;
DROP TABLE agent_changes;
ALTER TABLE agent_changes_new RENAME TO agent_changes;
CREATE UNIQUE INDEX agent_changes_seq ON agent_changes (change_seq);
CREATE INDEX agent_changes_gone ON agent_changes (gone_at) WHERE gone_at IS NOT NULL;

CREATE TRIGGER agents_change_insert AFTER INSERT ON agents
BEGIN
    INSERT INTO agent_changes (pos, change_seq)
    VALUES (new.pos, (SELECT coalesce(max(change_seq), 0) + 1 FROM agent_changes))
    ON CONFLICT (pos) DO UPDATE SET change_seq = excluded.change_seq, gone_at = NULL;
END;

-- As in 0006.
CREATE TRIGGER agents_change_update
AFTER UPDATE OF name, display_name, description, tags, skills_text, owner, status, health_state, tombstone ON agents
WHEN old.name IS NOT new.name
    OR old.display_name IS NOT new.display_name
    OR old.description IS NOT new.description
    OR old.tags IS NOT new.tags
    OR old.skills_text IS NOT new.skills_text
    OR old.owner IS NOT new.owner
    OR old.status IS NOT new.status
    OR old.health_state IS NOT new.health_state
    OR old.tombstone IS NOT new.tombstone
BEGIN
    INSERT INTO agent_changes (pos, change_seq)
    VALUES (new.pos, (SELECT coalesce(max(change_seq), 0) + 1 FROM agent_changes))
    ON CONFLICT (pos) DO UPDATE SET change_seq = excluded.change_seq, gone_at = NULL;
END;

CREATE TRIGGER agents_change_delete AFTER DELETE ON agents
BEGIN
    UPDATE agent_changes
    SET change_seq = (SELECT coalesce(max(change_seq), 0) + 1 FROM agent_changes), gone_at = unixepoch()
    WHERE pos = old.pos;
END;

-- agent_sync (0008) loses a deleted listing's row (a listing evicted here
-- is not deleted for the peers that sync from this node), but its number
-- must not be handed out again: a peer whose cursor is at it would miss
-- the listing that took it. feed_floor keeps the largest number a deleted
-- row held when it was the largest, and the triggers number past it.
CREATE TABLE IF NOT EXISTS feed_floor (
    feed TEXT    PRIMARY KEY,
    seq  INTEGER NOT NULL
) WITHOUT ROWID;

DROP TRIGGER IF EXISTS agents_sync_delete;
CREATE TRIGGER agents_sync_delete BEFORE DELETE ON agents
BEGIN
    INSERT INTO feed_floor (feed, seq)
    SELECT 'sync', sync_seq FROM agent_sync
    WHERE pos = old.pos AND sync_seq = (SELECT max(sync_seq) FROM agent_sync)
    ON CONFLICT (feed) DO UPDATE SET seq = max(seq, excluded.seq);
END;

DROP TRIGGER IF EXISTS agents_sync_insert;
CREATE TRIGGER agents_sync_insert AFTER INSERT ON agents
BEGIN
    INSERT INTO agent_sync (pos, sync_seq)
    VALUES (new.pos, max(coalesce((SELECT max(sync_seq) FROM agent_sync), 0),
        coalesce((SELECT seq FROM feed_floor WHERE feed = 'sync'), 0)) + 1)
    ON CONFLICT (pos) DO UPDATE SET sync_seq = excluded.sync_seq;
END;

DROP TRIGGER IF EXISTS agents_sync_update;
CREATE TRIGGER agents_sync_update AFTER UPDATE OF seq ON agents
WHEN old.seq IS NOT new.seq
BEGIN
    INSERT INTO agent_sync (pos, sync_seq)
    VALUES (new.pos, max(coalesce((SELECT max(sync_seq) FROM agent_sync), 0),
        coalesce((SELECT seq FROM feed_floor WHERE feed = 'sync'), 0)) + 1)
    ON CONFLICT (pos) DO UPDATE SET sync_seq = excluded.sync_seq;
END;

-- The eviction's candidates, each class walked in first-seen order (pos)
-- from an index that holds only what may be evicted, with the host to
-- look up in nodes: never-heard hosts' listings are among both. (status
-- and tombstone are in agents_evict_gone too, for SQLite to check its OR
-- from the index alone.)
CREATE INDEX IF NOT EXISTS agents_evict_stale ON agents (pos, host_peer_id) WHERE status = 'stale' AND local = 0;
CREATE INDEX IF NOT EXISTS agents_evict_gone ON agents (pos, host_peer_id, status, tombstone) WHERE local = 0 AND (status = 'offline' OR tombstone = 1);
