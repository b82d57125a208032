-- 0007: the open planet (issue 18): bounds on what peers that never sent a
-- heartbeat can make this node hold.
--
-- agent_records_publisher answers the Sink's per-publisher quota
-- (CountPublished). publisher never changes for an id, so re-announcements
-- stay HOT updates of agent_records.
CREATE INDEX IF NOT EXISTS agent_records_publisher ON agent_records (publisher);

-- agents_unheard holds the candidates of ExpireUnheard: stale listings
-- this node does not host. Keyed by pos, not last_seen: an index on
-- last_seen would make every heartbeat's update of it non-HOT. Only
-- status changes into and out of stale write it.
CREATE INDEX IF NOT EXISTS agents_unheard ON agents (pos) WHERE status = 'stale' AND NOT local;

-- ListNodes pages by peer ID in byte order, as SQLite does, whatever the
-- database's collation.
CREATE INDEX IF NOT EXISTS nodes_peer_c ON nodes ((peer_id COLLATE "C"));

-- Rows an older Sink made for hosts that had never sent a heartbeat (its
-- noteHost: no addresses, no version, nothing hosted, no load) go: a node
-- row now means a verified heartbeat. A live node among them sends one
-- within an interval and has its row, and its listings online, again.
DELETE FROM nodes
WHERE addrs IS NULL AND version = '' AND agents_hosted = 0 AND load = 0;

-- Their listings are now listings of hosts never heard: stale, as the Sink
-- enters them, so that ExpireUnheard takes them offline. Both statuses are
-- visible, so agent_tags.visible does not change.
UPDATE agents a SET status = 'stale'
WHERE a.status = 'online' AND NOT a.local
  AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.peer_id = a.host_peer_id);
