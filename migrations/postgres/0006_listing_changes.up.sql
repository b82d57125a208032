-- 0006: a change number for every listing (store.ChangeFeed), for the
-- in-process search index to follow every writer of the database.
--
-- agent_changes holds the number of each row of agents: every insert of a
-- listing, and every update that changes what store.IndexDoc holds (the
-- text, tags, owner, status, health state, tombstone), gives the row a new
-- number from agent_change_seq. An update that changes none of those (a
-- heartbeat's last_seen, the health latency, expires_at) gives none.
--
-- A table of its own rather than a column of agents: an indexed column
-- changing on every update would make every such update non-HOT, so a
-- heartbeat would re-insert each lexeme of the row into the GIN indexes.
--
-- A number is taken when the row is written and becomes visible when its
-- transaction commits, so readers may see numbers out of order (see
-- store.ChangeFeed).
CREATE SEQUENCE agent_change_seq AS bigint;

CREATE TABLE agent_changes (
    pos        bigint PRIMARY KEY REFERENCES agents (pos) ON DELETE CASCADE,
    change_seq bigint NOT NULL
) WITH (
    autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
CREATE UNIQUE INDEX agent_changes_seq ON agent_changes (change_seq);

-- Existing rows, in first-seen order; new numbers start past them.
INSERT INTO agent_changes (pos, change_seq) SELECT pos, pos FROM agents ORDER BY pos;
SELECT setval('agent_change_seq', coalesce((SELECT max(pos) FROM agents), 0) + 1, false);

-- agent_changed gives the row of agents NEW a new number.
CREATE FUNCTION agent_changed() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO agent_changes (pos, change_seq) VALUES (NEW.pos, nextval('agent_change_seq'))
    ON CONFLICT (pos) DO UPDATE SET change_seq = excluded.change_seq;
    RETURN NULL;
END
$$;

-- agent_record_changed gives the listing of the row of agent_records NEW a
-- new number.
CREATE FUNCTION agent_record_changed() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO agent_changes (pos, change_seq)
    SELECT a.pos, nextval('agent_change_seq') FROM agents a WHERE a.id = NEW.id
    ON CONFLICT (pos) DO UPDATE SET change_seq = excluded.change_seq;
    RETURN NULL;
END
$$;

CREATE TRIGGER agents_change_insert AFTER INSERT ON agents
FOR EACH ROW EXECUTE FUNCTION agent_changed();

-- The columns of agents that IndexDoc holds. UPDATE OF keeps the writes
-- that set none of them (SetHealth's latency only, say) from evaluating
-- the WHEN at all; the WHEN keeps those that set them to what they were (a
-- heartbeat's status 'online' again) from calling the function.
CREATE TRIGGER agents_change_update
AFTER UPDATE OF tags, owner, status, health_state, tombstone ON agents
FOR EACH ROW
WHEN (OLD.tags IS DISTINCT FROM NEW.tags
    OR OLD.owner IS DISTINCT FROM NEW.owner
    OR OLD.status IS DISTINCT FROM NEW.status
    OR OLD.health_state IS DISTINCT FROM NEW.health_state
    OR OLD.tombstone IS DISTINCT FROM NEW.tombstone)
EXECUTE FUNCTION agent_changed();

-- The text IndexDoc holds is in agent_records (its insert comes with the
-- listing's, numbered above). Compared there as it is, not through
-- agents.search: the tsvector folds case and drops punctuation, so a
-- description changed only in those would keep its number.
CREATE TRIGGER agent_records_change_update
AFTER UPDATE OF name, display_name, description, skills ON agent_records
FOR EACH ROW
WHEN (OLD.name IS DISTINCT FROM NEW.name
    OR OLD.display_name IS DISTINCT FROM NEW.display_name
    OR OLD.description IS DISTINCT FROM NEW.description
    OR OLD.skills IS DISTINCT FROM NEW.skills)
EXECUTE FUNCTION agent_record_changed();
