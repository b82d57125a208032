package store_test

import (
	"bytes"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// SetPublicJSON keeps the engine's stored copy, and makes it from the
// record for a row stored before engines kept one (NULL column).
func TestSetPublicJSON(t *testing.T) {
	rec := agent.Record{ID: "id-1", Name: "weather", DisplayName: "Weather <b>", Tags: []string{"weather"}}
	want, err := store.PublicRecordJSON(&rec)
	if err != nil {
		t.Fatal(err)
	}
	l := store.Listing{Record: rec}
	if err := l.SetPublicJSON(nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l.PublicJSON, want) {
		t.Fatalf("from a NULL column: %s, want %s", l.PublicJSON, want)
	}
	stored := []byte(`{"id":"stored"}`)
	if err := l.SetPublicJSON(stored); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l.PublicJSON, stored) {
		t.Fatalf("with a stored copy: %s, want it as stored", l.PublicJSON)
	}
}
