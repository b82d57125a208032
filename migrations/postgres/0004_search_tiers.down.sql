ALTER INDEX agents_search RESET (gin_pending_list_limit);
DROP INDEX IF EXISTS agents_search_head;
DROP INDEX IF EXISTS agents_search_title;
ALTER TABLE agent_records DROP COLUMN IF EXISTS public_json;
ALTER TABLE agents DROP COLUMN IF EXISTS search_head, DROP COLUMN IF EXISTS search_title;
