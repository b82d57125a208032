ALTER TABLE agents DROP COLUMN public_json;
