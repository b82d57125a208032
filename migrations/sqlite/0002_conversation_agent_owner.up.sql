-- A conversation is bound to the owner and publisher of the agent record it
-- started with, so a turn never reaches a different owner's backend after
-- the agent's name was deleted and registered again. Existing conversations
-- are bound to the record the cache holds now.
ALTER TABLE conversations ADD COLUMN agent_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN agent_publisher TEXT NOT NULL DEFAULT '';
UPDATE conversations SET
    agent_owner = coalesce((SELECT a.owner FROM agents a WHERE a.id = conversations.agent_id), ''),
    agent_publisher = coalesce((SELECT a.publisher FROM agents a WHERE a.id = conversations.agent_id), '');
