-- 0008: incremental, resumable catalogue sync (issue 20).
--
-- agent_sync numbers every listing's envelope for sync, as agent_changes
-- (0006) numbers what the search index holds: each insert of a listing and
-- each new seq (a new signed envelope: an update, a delete, a re-sign) gives
-- the row a number from agent_sync_seq. Status and health changes give
-- none, so a host going stale and back makes no peer pull its listings
-- again; a re-sign does, so a listing whose update was lost in gossip
-- reaches every mirror by sync. A table of its own: agents' updates stay
-- HOT. Numbers become visible at commit, out of order: SyncChanges serves
-- only up to a settled horizon (store/postgres/syncfeed.go).
CREATE SEQUENCE IF NOT EXISTS agent_sync_seq AS bigint;

CREATE TABLE IF NOT EXISTS agent_sync (
    pos      bigint PRIMARY KEY REFERENCES agents (pos) ON DELETE CASCADE,
    sync_seq bigint NOT NULL
) WITH (
    autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
CREATE UNIQUE INDEX IF NOT EXISTS agent_sync_by_seq ON agent_sync (sync_seq);

-- Existing rows, in first-seen order; new numbers start past them. (Every
-- statement here may run again on a database migrated down and up.)
INSERT INTO agent_sync (pos, sync_seq) SELECT pos, pos FROM agents ORDER BY pos ON CONFLICT DO NOTHING;
SELECT setval('agent_sync_seq', greatest(coalesce((SELECT max(pos) FROM agents), 0),
    coalesce((SELECT max(sync_seq) FROM agent_sync), 0)) + 1, false);

CREATE OR REPLACE FUNCTION agent_synced() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO agent_sync (pos, sync_seq) VALUES (NEW.pos, nextval('agent_sync_seq'))
    ON CONFLICT (pos) DO UPDATE SET sync_seq = excluded.sync_seq;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS agents_sync_insert ON agents;
CREATE TRIGGER agents_sync_insert AFTER INSERT ON agents
FOR EACH ROW EXECUTE FUNCTION agent_synced();

DROP TRIGGER IF EXISTS agents_sync_update ON agents;
CREATE TRIGGER agents_sync_update AFTER UPDATE OF seq ON agents
FOR EACH ROW WHEN (OLD.seq IS DISTINCT FROM NEW.seq)
EXECUTE FUNCTION agent_synced();

-- sync_feed names this database's change feed (agent_changes, 0006): a
-- peer keeps a cursor in our feed, and a feed id it does not know (a
-- database wiped and made again) tells it its cursor means nothing here.
CREATE TABLE IF NOT EXISTS sync_feed (id text NOT NULL);
INSERT INTO sync_feed (id) SELECT md5(random()::text || clock_timestamp()::text) WHERE NOT EXISTS (SELECT 1 FROM sync_feed);

-- sync_cursors is where this node got to in each peer's feed, per shard of
-- the id space (p2p/sync_feed.go): the change number to continue after,
-- and whether the shard was once pulled to its end (complete). The row of
-- peer '' holds no position: it says that some peer's shard is complete.
CREATE TABLE IF NOT EXISTS sync_cursors (
    peer_id    text NOT NULL,
    shard      integer NOT NULL,
    feed       text NOT NULL,
    after_seq  bigint NOT NULL,
    complete   boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (peer_id, shard)
);
