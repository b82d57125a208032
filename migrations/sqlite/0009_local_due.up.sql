-- 0009_local_due: the host's timers read its own listings a page at a
-- time (store.Locals, issue 20): re-signing walks what expires first,
-- probes and the MCP agent tools walk the ids, and /api/v1/node counts.
-- Both indexes hold only this node's live listings, so a mirror of a
-- million others pays nothing for them, and each is covering for the
-- walk or the count it serves (publisher is in the due index so another
-- replica's listings are skipped without reading their rows).
CREATE INDEX IF NOT EXISTS agents_local_due ON agents (expires_at, id, publisher) WHERE local = 1 AND tombstone = 0;
CREATE INDEX IF NOT EXISTS agents_local_id ON agents (id) WHERE local = 1 AND tombstone = 0;
