package p2p

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	if filling, _, shards := m.SyncFill(); filling < 0 || shards != 8 {
		t.Errorf("SyncFill = %d filling of %d shards", filling, shards)
	}
}
