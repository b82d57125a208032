-- 0006: a change number for every listing (store.ChangeFeed), for the
-- in-process search index to follow every writer of the database.
--
-- agent_changes holds the number of each row of agents: every insert of a
-- listing, and every update that changes what store.IndexDoc holds (the
-- text, tags, owner, status, health state, tombstone), gives the row a new
-- number, larger than any before. An update that changes none of those (a
-- heartbeat's last_seen, the health latency, expires_at) gives none. A
-- table of its own rather than a column of agents, so that the number's
-- index is written only on a change, never by a heartbeat, as on Postgres.
--
-- SQLite has one writer at a time, so max + 1 (one probe of
-- agent_changes_seq) hands numbers out in commit order.
CREATE TABLE agent_changes (
    pos        INTEGER PRIMARY KEY REFERENCES agents (pos) ON DELETE CASCADE,
    change_seq INTEGER NOT NULL
);
CREATE UNIQUE INDEX agent_changes_seq ON agent_changes (change_seq);

-- Existing rows, in first-seen order.
INSERT INTO agent_changes (pos, change_seq) SELECT pos, pos FROM agents ORDER BY pos;

CREATE TRIGGER agents_change_insert AFTER INSERT ON agents
BEGIN
    INSERT INTO agent_changes (pos, change_seq)
    VALUES (new.pos, (SELECT coalesce(max(change_seq), 0) + 1 FROM agent_changes))
    ON CONFLICT (pos) DO UPDATE SET change_seq = excluded.change_seq;
END;

-- UPDATE OF keeps the writes that set none of these columns (SetHealth's
-- latency only, say) from evaluating the WHEN at all; the WHEN keeps those
-- that set them to what they were (a heartbeat's status 'online' again)
-- from taking a number.
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
