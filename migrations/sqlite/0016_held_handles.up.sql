-- 0016_held_handles: the handle of a deleted account is held for a while
-- (DeleteUser's holdUntil, unix nanoseconds) so that no one else signs up
-- under it at once: other nodes and the people who knew @handle would
-- reach the newcomer. CreateUser refuses a handle held past now and
-- forgets the holds that ended (held_handles_until finds them), so the
-- table holds only the deletions of the hold period.
CREATE TABLE IF NOT EXISTS held_handles (
    handle     TEXT    PRIMARY KEY COLLATE NOCASE,
    held_until INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS held_handles_until ON held_handles (held_until);
