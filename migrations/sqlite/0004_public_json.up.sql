-- 0004: each record's public JSON kept precomputed (store.PublicRecordJSON),
-- so a page of search results is sent without decoding and re-encoding the
-- JSON columns. NULL for rows written before this migration: the store
-- then encodes it when it reads the row.
ALTER TABLE agents ADD COLUMN public_json BLOB;
