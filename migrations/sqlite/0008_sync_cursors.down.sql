DROP TABLE IF EXISTS sync_cursors;
DROP TABLE IF EXISTS sync_feed;
DROP TRIGGER IF EXISTS agents_sync_update;
DROP TRIGGER IF EXISTS agents_sync_insert;
DROP TABLE IF EXISTS agent_sync;
