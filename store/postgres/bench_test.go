package postgres_test

import (
	"testing"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/storetest"
)

// BenchmarkStore runs the shared read benchmarks on 10k and 100k listings:
//
//	go test -run XXX -bench . -benchtime 200x ./store/postgres/
func BenchmarkStore(b *testing.B) {
	storetest.Benchmarks(b, func(b *testing.B) store.Store { return pgtest.Open(b) })
}
