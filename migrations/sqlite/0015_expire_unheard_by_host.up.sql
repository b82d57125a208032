-- ExpireUnheard walks the catalogue's hosts in agents_host (one seek a
-- host) instead of the stale listings in agents_unheard: that walk read
-- every stale listing on every sweep when their hosts had been heard. The
-- index has no reader left, and every status change of a listing from
-- the network paid for it.
DROP INDEX IF EXISTS agents_unheard;
