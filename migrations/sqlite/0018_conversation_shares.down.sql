DROP TABLE IF EXISTS conversation_shares;
