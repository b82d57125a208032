-- 0017_node_evidence: when this node began hearing each node (store.Node
-- FirstHeard), the evidence a host's listings earn: a publisher's quota
-- grows with it, and at --max-listings a new listing evicts only stale
-- listings of hosts first heard no earlier than its own (store.Evictor).
-- Nodes heard before it count from their last heartbeat.
ALTER TABLE nodes ADD COLUMN IF NOT EXISTS first_heard timestamptz;
UPDATE nodes SET first_heard = coalesce(last_heartbeat, 'epoch') WHERE first_heard IS NULL;
