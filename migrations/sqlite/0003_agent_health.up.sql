-- Agent health (docs/architecture.md "Agent health"): what each listing's host last said
-- in its signed heartbeat. Times are unix nanoseconds, NULL until the host
-- has reported one.
ALTER TABLE agents ADD COLUMN health_state TEXT NOT NULL DEFAULT 'unknown'
    CHECK (health_state IN ('healthy', 'degraded', 'failing', 'unknown'));
ALTER TABLE agents ADD COLUMN health_latency_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN health_success_rate REAL NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN health_last_ok_at INTEGER;
ALTER TABLE agents ADD COLUMN health_checked_at INTEGER;

-- Search lists failing agents last, in a pass of their own after the
-- others' (store/sqlite/search.go); this index holds only them, so that
-- pass walks few rows newest first however large the catalogue.
CREATE INDEX agents_failing ON agents (pos) WHERE health_state = 'failing';
