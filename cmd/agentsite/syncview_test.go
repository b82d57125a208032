package main

import (
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// TestQuotaRefusalsOnTheNodeAPI: the publishers the Sink refused over
// their quota reach GET /api/v1/node's sync in the Sink's order, at most
// the bound, each with its quota and whether it was heard.
func TestQuotaRefusalsOnTheNodeAPI(t *testing.T) {
	at := time.Date(2026, 12, 7, 6, 0, 0, 0, time.FixedZone("x", 3600))
	rs := []store.PublisherRefusal{
		{Publisher: "big", Refused: 10004, Held: 10005, Limit: 10000, Last: at, Heard: true},
		{Publisher: "rogue", Refused: 40, Held: 3, Limit: 3, Last: at},
		{Publisher: "third", Refused: 1},
	}
	got := quotaRefusals(rs, 2)
	if len(got) != 2 || got[0].Publisher != "big" || got[0].Quota != 10000 || !got[0].Heard || got[0].Refused != 10004 ||
		got[1].Publisher != "rogue" || got[1].Heard || !got[1].Last.Equal(at) || got[1].Last.Location() != time.UTC {
		t.Errorf("quotaRefusals = %+v", got)
	}
	if got := quotaRefusals(nil, 50); got == nil || len(got) != 0 {
		t.Errorf("no refusals = %#v, want an empty list (the API says [] rather than null)", got)
	}
}
