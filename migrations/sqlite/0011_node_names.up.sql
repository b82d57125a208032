-- 0011_node_names: a node's name for people (--node-name), as its signed
-- heartbeat says it (issue 23). A label, not an identity: several nodes
-- may share one, and node_names_name finds whether a name is shared (the
-- pages then show the short peer ID beside it). A table of its own, not a
-- column of nodes, so that every statement here may run again (SQLite has
-- no ADD COLUMN IF NOT EXISTS; the migration tests go down and up); only
-- named nodes have a row.
CREATE TABLE IF NOT EXISTS node_names (
    peer_id TEXT PRIMARY KEY REFERENCES nodes (peer_id) ON DELETE CASCADE,
    name    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS node_names_name ON node_names (name);
