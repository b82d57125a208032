-- 0004: text search by relevance tiers, and each record's public JSON kept
-- precomputed (store/postgres/search.go, BENCHMARKS.md "Distinct queries").
--
-- search_title is the name and display name, search_head those and the
-- tags: a text search walks tier 1 (every term in the title), tier 2 (every
-- term in the title or tags) and tier 3 (anywhere, the search column), each
-- newest first, and stops when the page is full, as store/sqlite does. Each
-- tier's match is exact on its own GIN index, so the planner can either
-- walk agents_visible_health_pos backwards and stop after a page (a common
-- word) or read the few matches from the index (a rare one), instead of
-- ranking every match with ts_rank.
ALTER TABLE agents
    ADD COLUMN search_title tsvector NOT NULL DEFAULT ''::tsvector,
    ADD COLUMN search_head tsvector NOT NULL DEFAULT ''::tsvector;
ALTER TABLE agents ALTER COLUMN search_title SET STORAGE MAIN;
ALTER TABLE agents ALTER COLUMN search_head SET STORAGE MAIN;

-- public_json is store.PublicRecordJSON of the record, written by the
-- upsert; NULL for rows written before this migration (the store then
-- encodes it when it reads the row).
ALTER TABLE agent_records ADD COLUMN public_json bytea;
ALTER TABLE agent_records ALTER COLUMN public_json SET STORAGE EXTERNAL;

UPDATE agents a SET
    search_title = to_tsvector('simple'::regconfig, r.name || ' ' || r.display_name),
    search_head = to_tsvector('simple'::regconfig, r.name || ' ' || r.display_name)
        || to_tsvector('simple'::regconfig, coalesce(array_to_string(a.tags, ' '), ''))
FROM agent_records r
WHERE r.id = a.id;

CREATE INDEX agents_search_title ON agents USING gin (search_title);
CREATE INDEX agents_search_head ON agents USING gin (search_head);

-- A change of status (a host going stale) is not a HOT update, so it adds
-- every lexeme of the row to each text index's pending list, which every
-- search then reads through until (auto)vacuum flushes it. Small pending
-- lists keep that cost bounded between vacuums.
ALTER INDEX agents_search SET (gin_pending_list_limit = 256);
ALTER INDEX agents_search_title SET (gin_pending_list_limit = 256);
ALTER INDEX agents_search_head SET (gin_pending_list_limit = 256);
