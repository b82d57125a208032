-- 0014_agent_uses: how many conversations the host held with an agent over
-- the last 7 days (agent.Health.Uses7d), as its signed heartbeat says it
-- (issue 23, "Most used"; store.SortUsed orders by it).
ALTER TABLE agents ADD COLUMN IF NOT EXISTS health_uses_7d integer NOT NULL DEFAULT 0;
