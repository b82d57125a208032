DROP TABLE IF EXISTS sync_cursors;
DROP TABLE IF EXISTS sync_feed;
DROP TRIGGER IF EXISTS agents_sync_update ON agents;
DROP TRIGGER IF EXISTS agents_sync_insert ON agents;
DROP FUNCTION IF EXISTS agent_synced();
DROP TABLE IF EXISTS agent_sync;
DROP SEQUENCE IF EXISTS agent_sync_seq;
