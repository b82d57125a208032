package httpkit_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// TestClassifyStorageFull: a write the store has no room for is 507
// storage_full on every surface, with a message that says what to do and
// no server path.
func TestClassifyStorageFull(t *testing.T) {
	err := fmt.Errorf("store backend: sqlite: put backend: %w: database or disk is full (13)", store.ErrStorageFull)
	e := httpkit.Classify(err)
	if e.Status != http.StatusInsufficientStorage || e.Code != "storage_full" ||
		!strings.Contains(e.Message, "disk is full") || !strings.Contains(e.Message, "free disk space") || strings.Contains(e.Message, "sqlite") {
		t.Errorf("Classify(full) = %+v", e)
	}
}
