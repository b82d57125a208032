CREATE INDEX IF NOT EXISTS agents_unheard ON agents (last_seen) WHERE status = 'stale' AND local = 0;
