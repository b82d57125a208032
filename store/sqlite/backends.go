package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentsite/agentsite/agent"
)

const putBackendSQL = `-- name: put_backend
INSERT INTO agent_backends (agent_id, config, updated_at) VALUES (?, ?, ?)
ON CONFLICT (agent_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at`

// PutBackend implements store.Backends. The backend (API key included) is
// stored as JSON; the database file is the node's secret store, like its
// key file next to it.
func (db *DB) PutBackend(ctx context.Context, agentID string, b agent.Backend) error {
	return putBackend(ctx, pooled{db}, agentID, b)
}

func putBackend(ctx context.Context, w writer, agentID string, b agent.Backend) error {
	config, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("sqlite: put backend of agent %s: encode: %w", agentID, err)
	}
	_, err = w.ExecContext(ctx, putBackendSQL, agentID, string(config), time.Now().UnixNano())
	return dbErr("put backend of agent "+agentID, err)
}

// GetBackend implements store.Backends.
func (db *DB) GetBackend(ctx context.Context, agentID string) (agent.Backend, error) {
	var config string
	err := db.r.QueryRowContext(ctx, `-- name: get_backend
SELECT config FROM agent_backends WHERE agent_id = ?`, agentID).Scan(&config)
	if err != nil {
		return agent.Backend{}, dbErr("get backend of agent "+agentID, err)
	}
	var b agent.Backend
	if err := json.Unmarshal([]byte(config), &b); err != nil {
		return agent.Backend{}, fmt.Errorf("sqlite: get backend of agent %s: decode: %w", agentID, err)
	}
	return b, nil
}

// DeleteBackend implements store.Backends; deleting a missing backend is not an
// error.
func (db *DB) DeleteBackend(ctx context.Context, agentID string) error {
	return deleteBackend(ctx, pooled{db}, agentID)
}

func deleteBackend(ctx context.Context, w writer, agentID string) error {
	_, err := w.ExecContext(ctx, `-- name: delete_backend
DELETE FROM agent_backends WHERE agent_id = ?`, agentID)
	return dbErr("delete backend of agent "+agentID, err)
}
