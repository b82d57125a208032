package sqlite_test

import (
	"testing"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/storetest"
)

// BenchmarkStore runs the shared store benchmarks on a database file in a
// temporary directory:
//
//	go test -run XXX -bench . -benchtime 200x ./store/sqlite/
func BenchmarkStore(b *testing.B) {
	storetest.Benchmarks(b, func(b *testing.B) store.Store { return mustOpen(b) })
}
