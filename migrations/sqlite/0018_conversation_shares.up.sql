-- 0018_conversation_shares: a conversation's read-only share link, which
-- its owner creates and revokes (GET /share/{token}). Only the sha256 of
-- the link's token is kept, so a copy of the database does not hold
-- working links. One link per conversation; it goes with the conversation.
-- A table of its own, so that every statement here may run again.
CREATE TABLE IF NOT EXISTS conversation_shares (
    conversation_id TEXT    PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    token_hash      BLOB    NOT NULL UNIQUE,
    created_at      INTEGER NOT NULL
) WITHOUT ROWID;
