-- 0017_node_evidence: when this node began hearing each node (store.Node
-- FirstHeard), the evidence a host's listings earn: a publisher's quota
-- grows with it, and at --max-listings a new listing evicts only stale
-- listings of hosts first heard no earlier than its own (store.Evictor).
-- A table of its own, not a column of nodes, so that every statement here
-- may run again (SQLite has no ADD COLUMN IF NOT EXISTS; the migration
-- tests go down and up). Nodes heard before it count from their last
-- heartbeat.
CREATE TABLE IF NOT EXISTS node_evidence (
    peer_id     TEXT    PRIMARY KEY REFERENCES nodes (peer_id) ON DELETE CASCADE,
    first_heard INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO node_evidence (peer_id, first_heard)
SELECT peer_id, coalesce(last_heartbeat, 0) FROM nodes WHERE true
ON CONFLICT (peer_id) DO NOTHING;
