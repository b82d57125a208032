package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsite/agentsite/agent"
)

// PutBackend implements store.Backends.
func (db *DB) PutBackend(ctx context.Context, agentID string, b agent.Backend) error {
	return putBackend(ctx, pooled{db}, agentID, b)
}

// putBackend is PutBackend through ex; its result is not read, so a whole
// batch sends it with its next statement (execLater).
func putBackend(ctx context.Context, ex executor, agentID string, b agent.Backend) error {
	config, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("postgres: put backend of agent %s: encode: %w", agentID, err)
	}
	err = ex.execLater(ctx, `-- name: put_backend
INSERT INTO agent_backends (agent_id, config, updated_at) VALUES ($1, $2, now())
ON CONFLICT (agent_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at`,
		agentID, config)
	return dbErr("put backend of agent "+agentID, err)
}

// GetBackend implements store.Backends.
func (db *DB) GetBackend(ctx context.Context, agentID string) (agent.Backend, error) {
	return getBackend(ctx, db.q, agentID)
}

func getBackend(ctx context.Context, q querier, agentID string) (agent.Backend, error) {
	var config []byte
	err := q.QueryRow(ctx, `-- name: get_backend
SELECT config FROM agent_backends WHERE agent_id = $1`, agentID).Scan(&config)
	if err != nil {
		return agent.Backend{}, dbErr("get backend of agent "+agentID, err)
	}
	var b agent.Backend
	if err := json.Unmarshal(config, &b); err != nil {
		return agent.Backend{}, fmt.Errorf("postgres: get backend of agent %s: decode: %w", agentID, err)
	}
	return b, nil
}

// DeleteBackend implements store.Backends.
func (db *DB) DeleteBackend(ctx context.Context, agentID string) error {
	return deleteBackend(ctx, db.q, agentID)
}

func deleteBackend(ctx context.Context, q querier, agentID string) error {
	_, err := q.Exec(ctx, `-- name: delete_backend
DELETE FROM agent_backends WHERE agent_id = $1`, agentID)
	return dbErr("delete backend of agent "+agentID, err)
}
