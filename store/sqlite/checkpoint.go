package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"
)

// The checkpointer (docs/architecture.md §6, "Checkpoints off the
// writer's path"). A WAL checkpoint copies committed pages from the WAL
// back into the database file and syncs both files; SQLite runs it inside
// the COMMIT that makes the WAL reach wal_autocheckpoint pages. At chat
// rates that was one commit in ~10,000, and it took ~200 ms on this
// machine's disk: every turn in flight waited for it, which made the p99
// of 20 chatting clients 170–250 ms instead of 10–15 (BENCHMARKS.md, "The
// host's backend from memory, and where a WebSocket turn's time goes now").
// So a goroutine of its own checkpoints, on a connection of its own,
// while the writer goes on writing: a PASSIVE checkpoint takes no lock a
// writer or a reader waits for. It looks every checkpointEvery and
// checkpoints once checkpointWrites commits were made since its last run,
// or any at all checkpointAge ago: a busy node every 1,000 commits (at
// chat rates several times a second), a quiet one (a few heartbeats) once
// a minute, so that a planet of test nodes does not sync its files all the
// time. The writer's wal_autocheckpoint stays as the backstop for bursts
// (an import, a mirror's fill). While it syncs the WAL the writer's
// appends to that file wait for the disk: looking every second, each
// checkpoint synced a second of WAL and stalled the writer 70–130 ms (p99
// of 20 clients up to 108 ms); looking every 100 ms, it syncs a sixth of
// that and the p99 was 16–21 ms (BENCHMARKS.md).

// Checkpointer defaults (tests set their own on the checkpointer).
const (
	checkpointEvery  = 100 * time.Millisecond
	checkpointWrites = 1000
	checkpointAge    = time.Minute
)

// checkpointTimeout bounds one checkpoint.
const checkpointTimeout = time.Minute

// checkpointer is the DB's background checkpoint: its connection, its
// loop's lifetime and what its last run did.
type checkpointer struct {
	conn *sql.DB
	// every is how often it looks; it checkpoints after minWrites commits,
	// or after one once maxAge passed since its last run.
	every     time.Duration
	minWrites uint64
	maxAge    time.Duration
	stop      context.CancelFunc
	done      chan struct{}

	// writes counts the committed writes (noteWrite); a run with none
	// since the last one does nothing.
	writes atomic.Uint64
	// runs, frames and copied are the checkpoints run and the WAL frames
	// the last one found and copied back (tests, logs).
	runs, frames, copied atomic.Int64
}

// startCheckpointer opens the checkpointer's connection to path and
// starts its loop; Close stops it.
func (db *DB) startCheckpointer(path string, every time.Duration, minWrites uint64, maxAge time.Duration) error {
	conn, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		return fmt.Errorf("sqlite: open %s for checkpoints: %w", path, err)
	}
	conn.SetMaxOpenConns(1)
	conn.SetMaxIdleConns(1)
	conn.SetConnMaxIdleTime(0)
	conn.SetConnMaxLifetime(0)
	ctx, stop := context.WithCancel(context.Background())
	db.ckpt = &checkpointer{conn: conn, every: every, minWrites: minWrites, maxAge: maxAge, stop: stop, done: make(chan struct{})}
	go db.checkpointLoop(ctx)
	return nil
}

// checkpointLoop checkpoints while writes come in (see checkpointer),
// until ctx ends.
func (db *DB) checkpointLoop(ctx context.Context) {
	c := db.ckpt
	defer close(c.done)
	t := time.NewTicker(c.every)
	defer t.Stop()
	var seen uint64
	last := time.Now()
	failing := false
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-t.C:
		}
		w := c.writes.Load()
		if !c.due(w-seen, now.Sub(last)) {
			continue
		}
		err := db.checkpoint(ctx)
		switch {
		case err == nil:
			seen, last = w, now
			if failing {
				db.logger.Info("sqlite: checkpoints work again")
			}
			failing = false
		case ctx.Err() != nil:
			return
		case !failing: // said once a streak; the writer's backstop still runs
			db.logger.Warn("sqlite: a background checkpoint failed; will retry (the writer checkpoints past wal_autocheckpoint meanwhile)", "err", err)
			failing = true
		}
	}
}

// due reports whether a checkpoint is due after writes commits and
// elapsed time since the last one.
func (c *checkpointer) due(writes uint64, elapsed time.Duration) bool {
	return writes > 0 && (writes >= c.minWrites || elapsed >= c.maxAge)
}

// checkpoint runs one PASSIVE checkpoint on the checkpointer's connection.
func (db *DB) checkpoint(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	start := time.Now()
	var busy, frames, copied int64
	err := db.ckpt.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	db.opts.Metrics.Observe("checkpoint", time.Since(start), err)
	if err != nil {
		return dbErr("checkpoint", err)
	}
	db.ckpt.runs.Add(1)
	db.ckpt.frames.Store(frames)
	db.ckpt.copied.Store(copied)
	return nil
}

// closeCheckpointer stops the loop and closes its connection (nil: there
// is none, as on a read-only database).
func (db *DB) closeCheckpointer() error {
	if db.ckpt == nil {
		return nil
	}
	db.ckpt.stop()
	<-db.ckpt.done
	return db.ckpt.conn.Close()
}
