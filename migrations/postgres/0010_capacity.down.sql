-- Reverts 0010_capacity.
DROP INDEX IF EXISTS agents_evict_gone;
DROP TRIGGER IF EXISTS agents_change_delete ON agents;
DROP FUNCTION IF EXISTS agents_gone();
DELETE FROM agent_changes c WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.pos = c.pos);
DROP INDEX IF EXISTS agent_changes_gone;
ALTER TABLE agent_changes DROP COLUMN IF EXISTS gone_at;
ALTER TABLE agent_changes ADD CONSTRAINT agent_changes_pos_fkey FOREIGN KEY (pos) REFERENCES agents (pos) ON DELETE CASCADE;
