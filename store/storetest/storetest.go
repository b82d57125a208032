// Package storetest is the conformance suite every store engine must pass.
// Engines call Run from their own tests with a function that opens a fresh,
// empty, migrated store for each subtest, and Benchmarks from their
// benchmarks.
//
// The data is realistic: every listing is an agent.Record sealed with a
// fresh Ed25519 key and opened again, as the network delivers it. Times are
// cut to microseconds, the precision of Postgres' timestamptz, so every
// engine can round-trip them exactly.
package storetest

import (
	"testing"

	"github.com/agentsite/agentsite/store"
)

// Opener returns a fresh, empty, migrated store; it registers its own cleanup
// with t.Cleanup.
type Opener func(t *testing.T) store.Store

// testCase is one subtest; fn gets a fresh store.
type testCase struct {
	name string
	fn   func(t *testing.T, s store.Store)
}

// Run runs the whole suite against open, one fresh store per subtest.
func Run(t *testing.T, open Opener) {
	t.Helper()
	groups := [][]testCase{recordCases, searchCases, pagingCases, statusCases, portalCases, accountCases, conversationCases, catalogueCases, healthCases, relevanceCases, batchCases, browseCases, changeCases, honestCases, openPlanetCases, localCases, heartbeatCases, nodeNameCases, capacityCases, sinkPageCases, accountChangeCases, usesCases, syncOwnCases, countCases, evidenceCases, memoryCases}
	for _, cases := range groups {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
		}
	}
}
