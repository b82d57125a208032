-- 0009_local_due: the host's timers read its own listings a page at a
-- time (store.Locals, issue 20): re-signing walks what expires first,
-- probes and the MCP agent tools walk the ids, and /api/v1/node counts
-- (an index-only scan of agents_local_id). Both indexes hold only this
-- node's live listings, so a mirror of a million others pays nothing for
-- them.
CREATE INDEX IF NOT EXISTS agents_local_due ON agents (expires_at, id) WHERE local AND NOT tombstone;
CREATE INDEX IF NOT EXISTS agents_local_id ON agents (id) WHERE local AND NOT tombstone;
