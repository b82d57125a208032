-- 0005: two small full-text indexes beside agents_fts, for the relevance
-- tiers of a text search (store/sqlite/search.go). agents_fts_title holds
-- a listing's name and display name, agents_fts_head those and its tags.
-- Tiers 1 and 2 (every term in the title; in the title or tags) then walk
-- the short doclists of these, where a column filter on agents_fts walked
-- a word's whole doclist over every column: most words are in few titles,
-- and the filter only drops entries after reading them. Tier 3 walks
-- agents_fts once, minus the head's matches. Same tokenizer and prefix
-- indexes as agents_fts, so a query matches the same rows; rowid = pos,
-- contentless with contentless_delete like agents_fts, and kept by the same
-- triggers, so the three always hold the same listings.
CREATE VIRTUAL TABLE agents_fts_title USING fts5 (
    name, display_name,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);

CREATE VIRTUAL TABLE agents_fts_head USING fts5 (
    name, display_name, tags,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);

INSERT INTO agents_fts_title (rowid, name, display_name)
SELECT pos, name, display_name FROM agents WHERE tombstone = 0;
INSERT INTO agents_fts_head (rowid, name, display_name, tags)
SELECT pos, name, display_name, tags FROM agents WHERE tombstone = 0;

DROP TRIGGER agents_fts_insert;
DROP TRIGGER agents_fts_update;
DROP TRIGGER agents_fts_delete;

CREATE TRIGGER agents_fts_insert AFTER INSERT ON agents WHEN new.tombstone = 0
BEGIN
    INSERT INTO agents_fts (rowid, name, display_name, tags, skills, description)
    VALUES (new.pos, new.name, new.display_name, new.tags, new.skills_text, new.description);
    INSERT INTO agents_fts_title (rowid, name, display_name)
    VALUES (new.pos, new.name, new.display_name);
    INSERT INTO agents_fts_head (rowid, name, display_name, tags)
    VALUES (new.pos, new.name, new.display_name, new.tags);
END;

-- Status changes (heartbeats, expiry) do not touch the indexed columns, so
-- they do not fire this trigger.
CREATE TRIGGER agents_fts_update
AFTER UPDATE OF name, display_name, description, tags, skills_text, tombstone ON agents
BEGIN
    DELETE FROM agents_fts WHERE rowid = old.pos;
    DELETE FROM agents_fts_title WHERE rowid = old.pos;
    DELETE FROM agents_fts_head WHERE rowid = old.pos;
    INSERT INTO agents_fts (rowid, name, display_name, tags, skills, description)
    SELECT new.pos, new.name, new.display_name, new.tags, new.skills_text, new.description
    WHERE new.tombstone = 0;
    INSERT INTO agents_fts_title (rowid, name, display_name)
    SELECT new.pos, new.name, new.display_name
    WHERE new.tombstone = 0;
    INSERT INTO agents_fts_head (rowid, name, display_name, tags)
    SELECT new.pos, new.name, new.display_name, new.tags
    WHERE new.tombstone = 0;
END;

CREATE TRIGGER agents_fts_delete AFTER DELETE ON agents
BEGIN
    DELETE FROM agents_fts WHERE rowid = old.pos;
    DELETE FROM agents_fts_title WHERE rowid = old.pos;
    DELETE FROM agents_fts_head WHERE rowid = old.pos;
END;
