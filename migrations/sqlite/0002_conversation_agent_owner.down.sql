-- Reverts 0002_conversation_agent_owner.
ALTER TABLE conversations DROP COLUMN agent_publisher;
ALTER TABLE conversations DROP COLUMN agent_owner;
