-- A conversation is bound to the owner and publisher of the agent record it
-- started with, so a turn never reaches a different owner's backend after
-- the agent's name was deleted and registered again. Existing conversations
-- are bound to the record the cache holds now.
ALTER TABLE conversations
    ADD COLUMN agent_owner text NOT NULL DEFAULT '',
    ADD COLUMN agent_publisher text NOT NULL DEFAULT '';
UPDATE conversations c SET agent_owner = a.owner, agent_publisher = r.publisher
FROM agents a JOIN agent_records r ON r.id = a.id
WHERE a.id = c.agent_id;
