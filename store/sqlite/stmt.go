package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// maxCachedStmts bounds a stmtCache. The store's fixed queries and the
// search variants people actually use (a few tags, statuses) are far fewer;
// anything beyond runs unprepared.
const maxCachedStmts = 256

// stmtCache prepares each distinct query once and reuses it. SQLite compiles
// every statement, triggers included, to bytecode; re-parsing on each call
// was a fifth of the CPU time of an upsert (pprof of the 100k seeding).
// database/sql prepares a cached *sql.Stmt again on each new connection of
// the pool by itself.
type stmtCache struct {
	pool  *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func newStmtCache(pool *sql.DB) *stmtCache {
	return &stmtCache{pool: pool, stmts: map[string]*sql.Stmt{}}
}

// lookup returns the prepared statement for query, preparing it on the pool
// if needed, or nil when the cache is full or the query does not prepare
// (running it unprepared then reports the error). Preparing takes a
// connection of the pool: never call it while holding one (in a
// transaction), the write pool has only one; warm before BEGIN instead.
func (c *stmtCache) lookup(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	s, ok := c.stmts[query]
	full := len(c.stmts) >= maxCachedStmts
	c.mu.Unlock()
	if ok {
		return s
	}
	if full {
		return nil
	}
	s, err := c.pool.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.stmts[query]; ok {
		s.Close()
		return old
	}
	c.stmts[query] = s
	return s
}

// peek returns the prepared statement for query if it is cached, without
// preparing it.
func (c *stmtCache) peek(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[query]
}

// warm prepares queries that a transaction is about to run.
func (c *stmtCache) warm(ctx context.Context, queries ...string) {
	for _, q := range queries {
		c.lookup(ctx, q)
	}
}

// exec implements runner, with the prepared statement when there is one.
func (c *stmtCache) exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	if s := c.lookup(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return c.pool.ExecContext(ctx, query, args...)
}

// query implements runner, with the prepared statement when there is one.
func (c *stmtCache) query(ctx context.Context, query string, args []any) (*sql.Rows, error) {
	if s := c.lookup(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return c.pool.QueryContext(ctx, query, args...)
}

// Close closes every cached statement.
func (c *stmtCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.Close())
		delete(c.stmts, q)
	}
	return errors.Join(errs...)
}

// txStmts runs queries in tx with the statements of cache that were warmed
// before the transaction began (database/sql reuses a statement already
// prepared on the transaction's connection); others run unprepared.
type txStmts struct {
	tx    *sql.Tx
	cache *stmtCache
}

// exec implements runner.
func (t txStmts) exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	if s := t.cache.peek(query); s != nil {
		return t.tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

// query implements runner.
func (t txStmts) query(ctx context.Context, query string, args []any) (*sql.Rows, error) {
	if s := t.cache.peek(query); s != nil {
		return t.tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}
