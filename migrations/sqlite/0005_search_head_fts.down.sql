-- Reverts 0005: agents_fts alone again, with the triggers of 0001.
DROP TRIGGER IF EXISTS agents_fts_insert;
DROP TRIGGER IF EXISTS agents_fts_update;
DROP TRIGGER IF EXISTS agents_fts_delete;
DROP TABLE IF EXISTS agents_fts_head;
DROP TABLE IF EXISTS agents_fts_title;

CREATE TRIGGER agents_fts_insert AFTER INSERT ON agents WHEN new.tombstone = 0
BEGIN
    INSERT INTO agents_fts (rowid, name, display_name, tags, skills, description)
    VALUES (new.pos, new.name, new.display_name, new.tags, new.skills_text, new.description);
END;

CREATE TRIGGER agents_fts_update
AFTER UPDATE OF name, display_name, description, tags, skills_text, tombstone ON agents
BEGIN
    DELETE FROM agents_fts WHERE rowid = old.pos;
    INSERT INTO agents_fts (rowid, name, display_name, tags, skills, description)
    SELECT new.pos, new.name, new.display_name, new.tags, new.skills_text, new.description
    WHERE new.tombstone = 0;
END;

CREATE TRIGGER agents_fts_delete AFTER DELETE ON agents
BEGIN
    DELETE FROM agents_fts WHERE rowid = old.pos;
END;
