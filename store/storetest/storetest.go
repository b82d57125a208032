// Package storetest is the conformance suite every store engine must pass.
// Engines call Run from their own tests with a function that opens a fresh,
// empty, migrated store for each subtest.
package storetest

import (
	"testing"

	"github.com/agentsite/agentsite/store"
)

// Opener returns a fresh, empty, migrated store; it registers its own cleanup
// with t.Cleanup.
type Opener func(t *testing.T) store.Store

// Run runs the whole suite against open.
func Run(t *testing.T, open Opener) {
	t.Helper()
	// Subtests are added by the suite's files (records, search, users, ...).
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, s store.Store)
}

var cases []testCase
