-- Reverts 0003_agent_health.
DROP INDEX agents_failing;
ALTER TABLE agents DROP COLUMN health_checked_at;
ALTER TABLE agents DROP COLUMN health_last_ok_at;
ALTER TABLE agents DROP COLUMN health_success_rate;
ALTER TABLE agents DROP COLUMN health_latency_ms;
ALTER TABLE agents DROP COLUMN health_state;
