-- Reverts 0007_open_planet's indexes (the node rows it dropped, made for
-- hosts never heard, are not brought back).
DROP INDEX IF EXISTS nodes_peer_c;
DROP INDEX IF EXISTS agents_unheard;
DROP INDEX IF EXISTS agent_records_publisher;
