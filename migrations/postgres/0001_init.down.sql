-- Reverts 0001_init: drops every table of the schema.
DROP TABLE IF EXISTS messages;
DROP TABLE IF EXISTS conversations;
DROP TABLE IF EXISTS api_tokens;
DROP TABLE IF EXISTS sessions;
DROP TABLE IF EXISTS users;
DROP TABLE IF EXISTS nodes;
DROP TABLE IF EXISTS agent_backends;
DROP TABLE IF EXISTS agent_tags;
DROP TABLE IF EXISTS agent_records;
DROP TABLE IF EXISTS agents;
DROP FUNCTION IF EXISTS agent_search_vector(text, text, text[], text, jsonb);
