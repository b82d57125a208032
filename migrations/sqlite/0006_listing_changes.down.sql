-- Reverts 0006_listing_changes.
DROP TRIGGER IF EXISTS agents_change_delete; -- 0010's, when a test skips its down
DROP TRIGGER IF EXISTS agents_change_update;
DROP TRIGGER IF EXISTS agents_change_insert;
DROP TABLE IF EXISTS agent_changes;
