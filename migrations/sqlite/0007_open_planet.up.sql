-- 0007: the open planet (issue 18): bounds on what peers that never sent a
-- heartbeat can make this node hold.
--
-- agents_publisher answers the Sink's per-publisher quota (CountPublished:
-- the listings of a publisher that are not offline) from the index alone
-- (status is in it for that), however many listings the publisher holds.
CREATE INDEX IF NOT EXISTS agents_publisher ON agents (publisher, status) WHERE status <> 'offline';

-- agents_unheard holds the candidates of ExpireUnheard: stale listings
-- this node does not host, by last_seen, so the sweep reads only those
-- heard of before its cutoff. A listing whose host never sent a heartbeat
-- enters stale (store.Sink.Put); a heartbeat's last_seen on an online
-- listing writes nothing here.
CREATE INDEX IF NOT EXISTS agents_unheard ON agents (last_seen) WHERE status = 'stale' AND local = 0;

-- Rows an older Sink made for hosts that had never sent a heartbeat (its
-- noteHost: no addresses, no version, nothing hosted, no load) go: a node
-- row now means a verified heartbeat. A live node among them sends one
-- within an interval and has its row, and its listings online, again.
DELETE FROM nodes
WHERE addrs IS NULL AND version = '' AND agents_hosted = 0 AND load = 0;

-- Their listings are now listings of hosts never heard: stale, as the Sink
-- enters them, so that ExpireUnheard takes them offline.
UPDATE agents SET status = 'stale'
WHERE status = 'online' AND local = 0
  AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.peer_id = agents.host_peer_id);
