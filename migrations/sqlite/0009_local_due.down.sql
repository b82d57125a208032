DROP INDEX IF EXISTS agents_local_id;
DROP INDEX IF EXISTS agents_local_due;
