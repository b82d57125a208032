-- Agent health (docs/architecture.md "Agent health"): what each listing's host last said
-- in its signed heartbeat. On agents, the narrow table, because search
-- filters and ranks on the state and heartbeats write it, as they write
-- status. Times are NULL until the host has reported one.
ALTER TABLE agents
    ADD COLUMN health_state text NOT NULL DEFAULT 'unknown'
        CHECK (health_state IN ('healthy', 'degraded', 'failing', 'unknown')),
    ADD COLUMN health_latency_ms integer NOT NULL DEFAULT 0,
    ADD COLUMN health_success_rate double precision NOT NULL DEFAULT 0,
    ADD COLUMN health_last_ok_at timestamptz,
    ADD COLUMN health_checked_at timestamptz;

-- Search puts failing agents last: the listing walks are now on
-- (not failing, pos), backwards, and still stop after a page. The
-- expression is spelled exactly as store/postgres/search.go orders by it.
CREATE INDEX agents_visible_health_pos ON agents ((health_state <> 'failing'), pos) WHERE visible;
DROP INDEX agents_status_pos;
-- Explicit status filters; CountByStatus and Stats count on its leading
-- status column as they did on agents_status_pos.
CREATE INDEX agents_status_health_pos ON agents (status, (health_state <> 'failing'), pos) WHERE NOT tombstone;
