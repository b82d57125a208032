package postgres_test

import (
	"testing"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/storetest"
)

// BenchmarkEviction: storetest.BenchmarkEviction on Postgres.
//
//	go test -run XXX -bench Eviction -benchtime 10x ./store/postgres/
func BenchmarkEviction(b *testing.B) {
	storetest.BenchmarkEviction(b, func(b *testing.B) store.Store { return pgtest.Open(b) })
}
