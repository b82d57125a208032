-- Search runs its failing pass (failing agents come last) only when the
-- first pass left the page short and some listing is failing: this
-- partial index answers that with one probe (store/postgres/search.go,
-- anyFailingSQL). It stays empty in most catalogues.
CREATE INDEX agents_failing ON agents (pos) WHERE health_state = 'failing';
