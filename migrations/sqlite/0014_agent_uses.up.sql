-- 0014_agent_uses: how many conversations the host held with an agent over
-- the last 7 days (agent.Health.Uses7d), as its signed heartbeat says it
-- (issue 23, "Most used"). A table of its own, not a column of agents, so
-- that every statement here may run again (SQLite has no ADD COLUMN IF NOT
-- EXISTS; the migration tests go down and up); only used agents have a row.
-- agent_uses_order walks the agents by uses, most first (store.SortUsed).
CREATE TABLE IF NOT EXISTS agent_uses (
    agent_pos INTEGER PRIMARY KEY REFERENCES agents (pos) ON DELETE CASCADE,
    uses_7d   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS agent_uses_order ON agent_uses (uses_7d, agent_pos);
