package postgres

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/store"
)

// PlanEverySearch makes db plan each search for its own values, as it
// does once the catalogue holds customPlanRows listings.
func PlanEverySearch(db *DB) {
	db.size.checked.Store(time.Now().Add(time.Hour).UnixNano())
	db.size.big.Store(true)
}

// InCallSavepoint runs fn as one store call of batch tx (InBatch's Tx)
// runs, in a savepoint of its own, on ctx; exec runs a statement of the
// call.
func InCallSavepoint(ctx context.Context, tx store.Tx, fn func(exec func(sql string, args ...any) error) error) error {
	b := tx.(batchTx).b
	return inSavepoint(ctx, b.tx, false, func() error {
		return fn(func(sql string, args ...any) error {
			_, err := b.tx.Exec(ctx, sql, args...)
			return err
		})
	})
}
