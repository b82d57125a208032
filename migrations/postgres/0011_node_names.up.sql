-- 0011_node_names: a node's name for people (--node-name), as its signed
-- heartbeat says it (issue 23). A label, not an identity: several nodes
-- may share one, and nodes_name finds whether a name is shared (the pages
-- then show the short peer ID beside it).
ALTER TABLE nodes ADD COLUMN IF NOT EXISTS name text NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS nodes_name ON nodes (name);
