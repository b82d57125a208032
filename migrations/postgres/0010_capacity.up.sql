-- 0010: the node's capacity (--max-listings, issue 20). At capacity a new
-- network listing makes room by deleting held ones (store.Evictor), so a
-- listing can now leave the agents table, and the change feed must say so.
--
-- agent_changes (0006) keeps the row of a deleted listing: the delete
-- gives it a new change number and gone_at, and ListingChanges reports it
-- as a tombstone, so the search index drops the listing (with the foreign
-- key's cascade the row went with the listing and the index never learnt
-- of it). The eviction prunes rows gone for ten minutes. agent_sync (0008)
-- keeps its cascade: its numbers come from a sequence, never handed out
-- twice, and a listing evicted here is not deleted for peers that sync
-- from this node. (Every statement may run again: the migration tests
-- migrate 0006 down and up.)
ALTER TABLE agent_changes DROP CONSTRAINT IF EXISTS agent_changes_pos_fkey;
ALTER TABLE agent_changes ADD COLUMN IF NOT EXISTS gone_at timestamptz;
CREATE INDEX IF NOT EXISTS agent_changes_gone ON agent_changes (gone_at) WHERE gone_at IS NOT NULL;

-- agents_gone numbers the row of the listing OLD, deleted: one probe of
-- agent_changes' primary key (a statement-level trigger joined the
-- deleted rows' transition table to all of agent_changes).
CREATE OR REPLACE FUNCTION agents_gone() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE agent_changes SET change_seq = nextval('agent_change_seq'), gone_at = now()
    WHERE pos = OLD.pos;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS agents_change_delete ON agents;
CREATE TRIGGER agents_change_delete AFTER DELETE ON agents
FOR EACH ROW EXECUTE FUNCTION agents_gone();

-- The eviction's candidates that are offline or tombstones, in first-seen
-- order, with the host to look up in nodes (the stale ones: agents_unheard,
-- 0007). status, tombstone and host_peer_id are indexed already, so
-- heartbeats' updates stay HOT.
CREATE INDEX IF NOT EXISTS agents_evict_gone ON agents (pos) INCLUDE (host_peer_id)
WHERE NOT local AND (status = 'offline' OR tombstone);
