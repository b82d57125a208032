-- Reverts 0006_listing_changes.
DROP TRIGGER IF EXISTS agents_change_delete ON agents; -- 0010's, when a test skips its down
DROP TRIGGER IF EXISTS agent_records_change_update ON agent_records;
DROP TRIGGER IF EXISTS agents_change_update ON agents;
DROP TRIGGER IF EXISTS agents_change_insert ON agents;
DROP FUNCTION IF EXISTS agent_record_changed();
DROP FUNCTION IF EXISTS agent_changed();
DROP TABLE IF EXISTS agent_changes;
DROP SEQUENCE IF EXISTS agent_change_seq;
