-- Reverts 0003_agent_health.
DROP INDEX agents_status_health_pos;
CREATE INDEX agents_status_pos ON agents (status, pos) WHERE NOT tombstone;
DROP INDEX agents_visible_health_pos;
ALTER TABLE agents
    DROP COLUMN health_checked_at,
    DROP COLUMN health_last_ok_at,
    DROP COLUMN health_success_rate,
    DROP COLUMN health_latency_ms,
    DROP COLUMN health_state;
