package sqlite_test

import (
	"testing"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
	"github.com/agentsite/agentsite/store/storetest"
)

// BenchmarkEviction: storetest.BenchmarkEviction on SQLite.
//
//	go test -run XXX -bench Eviction -benchtime 10x ./store/sqlite/
func BenchmarkEviction(b *testing.B) {
	storetest.BenchmarkEviction(b, func(b *testing.B) store.Store { return sqlitetest.Open(b) })
}
