DROP INDEX IF EXISTS agents_failing;
