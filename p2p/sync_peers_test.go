package p2p

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestSyncPeersSaysWhatEachPeerBrought: a mirror syncing from a real
// node keeps, for that peer, the bytes read, the records taken and those
// refused with their reason (here admission's quota on publishers the
// mirror never heard), as GET /api/v1/node reports them.
func TestSyncPeersSaysWhatEachPeerBrought(t *testing.T) {
	const hosts, each, quota = 2, 15, 10
	src := &memCache{}
	now := time.Now().UTC()
	for i := range hosts {
		k, _ := genKey(t)
		for j := range each {
			r, env := sealRecord(t, k, fmt.Sprintf("bot-%d-%d", i, j), 1, now, time.Hour, "")
			if _, err := src.Put(context.Background(), r, env); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := startNode(t, nil, Config{Cache: src, NoSyncOnConnect: true})
	mirror := &memCache{}
	m := startNode(t, nil, Config{Cache: mirror, SyncInterval: time.Hour, Admission: Admission{UnheardPerHour: quota}})
	connect(t, m, s)
	var row PeerSync
	waitfor.Until(t, 30*time.Second, "the sync to be counted", func() bool {
		for _, r := range m.SyncPeers() {
			if r.Peer == s.PeerID() && r.Records["new"]+r.Records["refused"] >= hosts*each {
				row = r
				return true
			}
		}
		return false
	})
	if row.Bytes <= 0 {
		t.Errorf("bytes read from the peer = %d", row.Bytes)
	}
	if got := row.Records["new"]; got != int64(mirror.held()) || got == 0 {
		t.Errorf("records new = %d, the mirror holds %d", got, mirror.held())
	}
	if row.Refused["quota"] == 0 || row.Refused["quota"] != row.Records["refused"] {
		t.Errorf("refused by reason %v, records %v: want the refusals counted as quota", row.Refused, row.Records)
	}
	if row.Last.IsZero() {
		t.Error("no time of the last page")
	}
	if filling, _, shards := m.SyncFill(); filling < 0 || shards != syncShards {
		t.Errorf("SyncFill = %d filling of %d shards", filling, shards)
	}
}

// TestPeerSyncTableIsBounded: peers are adversaries; fresh identities
// syncing in turn cannot grow the table past maxSyncPeers, and the peers
// synced with most lately stay.
func TestPeerSyncTableIsBounded(t *testing.T) {
	tb := newPeerSyncTable()
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	var last peer.ID
	for i := range maxSyncPeers + 50 {
		last = peer.ID(fmt.Sprintf("peer-%04d", i))
		tb.record(last, "new", "", at.Add(time.Duration(i)*time.Second))
	}
	tb.read(last, 100, at.Add(time.Hour))
	rows := tb.rows()
	if len(rows) != maxSyncPeers {
		t.Fatalf("%d rows, want at most %d", len(rows), maxSyncPeers)
	}
	found := false
	for _, r := range rows {
		if r.Peer == peer.ID("peer-0000").String() {
			t.Error("the peer synced with longest ago is still kept")
		}
		if r.Peer == last.String() {
			found = r.Bytes == 100 && r.Records["new"] == 1
		}
	}
	if !found {
		t.Error("the latest peer's row is missing or wrong")
	}
}
