-- 0019_memories: what an llm agent with memory (backend "memory": true)
-- remembered for a person: facts keyed by the portal account and the
-- agent, kept on the node hosting the agent (docs/agents.md, "Memory").
-- They go with the account. The store bounds each person and agent
-- (store.MaxMemoriesPerAgent, store.MaxMemoryBytesPerAgent), forgetting
-- the oldest. A table of its own, so that every statement here may run
-- again.
CREATE TABLE IF NOT EXISTS memories (
    id         INTEGER PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    agent_id   TEXT    NOT NULL,
    fact       TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
-- A person's facts with one agent, newest first (recall, the bounds), and
-- all of a person's (the account page) by the same index.
CREATE INDEX IF NOT EXISTS memories_user_agent ON memories (user_id, agent_id, id);
