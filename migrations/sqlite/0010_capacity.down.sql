-- Reverts 0010_capacity: the feeds as 0006 and 0008 made them.
DROP INDEX IF EXISTS agents_evict_gone;
DROP INDEX IF EXISTS agents_evict_stale;

DROP TRIGGER IF EXISTS agents_sync_delete;
DROP TRIGGER IF EXISTS agents_sync_insert;
DROP TRIGGER IF EXISTS agents_sync_update;
CREATE TRIGGER agents_sync_insert AFTER INSERT ON agents
BEGIN
    INSERT INTO agent_sync (pos, sync_seq)
    VALUES (new.pos, (SELECT coalesce(max(sync_seq), 0) + 1 FROM agent_sync))
    ON CONFLICT (pos) DO UPDATE SET sync_seq = excluded.sync_seq;
END;
CREATE TRIGGER agents_sync_update AFTER UPDATE OF seq ON agents
WHEN old.seq IS NOT new.seq
BEGIN
    INSERT INTO agent_sync (pos, sync_seq)
    VALUES (new.pos, (SELECT coalesce(max(sync_seq), 0) + 1 FROM agent_sync))
    ON CONFLICT (pos) DO UPDATE SET sync_seq = excluded.sync_seq;
END;
DROP TABLE IF EXISTS feed_floor;

DROP TRIGGER IF EXISTS agents_change_delete;
DROP TRIGGER IF EXISTS agents_change_insert;
DROP TRIGGER IF EXISTS agents_change_update;
DROP TABLE IF EXISTS agent_changes_old;
CREATE TABLE agent_changes_old (
    pos        INTEGER PRIMARY KEY REFERENCES agents (pos) ON DELETE CASCADE,
    change_seq INTEGER NOT NULL
);
INSERT INTO agent_changes_old (pos, change_seq)
SELECT pos, change_seq FROM agent_changes c WHERE EXISTS (SELECT 1 FROM agents a WHERE a.pos = c.pos);
DROP TABLE agent_changes;
ALTER TABLE agent_changes_old RENAME TO agent_changes;
CREATE UNIQUE INDEX agent_changes_seq ON agent_changes (change_seq);

CREATE TRIGGER agents_change_insert AFTER INSERT ON agents
BEGIN
    INSERT INTO agent_changes (pos, change_seq)
    VALUES (new.pos, (SELECT coalesce(max(change_seq), 0) + 1 FROM agent_changes))
    ON CONFLICT (pos) DO UPDATE SET change_seq = excluded.change_seq;
END;
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
    ON CONFLICT (pos) DO UPDATE SET change_seq = excluded.change_seq;
END;
