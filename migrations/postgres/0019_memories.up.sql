-- 0019_memories: what an llm agent with memory (backend "memory": true)
-- remembered for a person: facts keyed by the portal account and the
-- agent, kept on the node hosting the agent (docs/agents.md, "Memory").
-- They go with the account. The store bounds each person and agent
-- (store.MaxMemoriesPerAgent, store.MaxMemoryBytesPerAgent), forgetting
-- the oldest.
CREATE TABLE IF NOT EXISTS memories (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    agent_id   text        NOT NULL,
    fact       text        NOT NULL,
    created_at timestamptz NOT NULL
);
-- A person's facts with one agent, newest first (recall, the bounds), and
-- all of a person's (the account page) by the same index.
CREATE INDEX IF NOT EXISTS memories_user_agent ON memories (user_id, agent_id, id);
