package catalogsync

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// The fuzz targets of what peers send this node besides records (those
// are agent's FuzzOpen and FuzzValidate; heartbeats are p2p/heartbeat's
// FuzzDecodeHeartbeat): the pages of both sync protocols as a client
// reads them. `make fuzz` runs each for a
// minute; `go test` runs their seeds, which are real encoded values made
// here from a fixed key and clock.

// fuzzClock is the fuzz targets' now.
var fuzzClock = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// fuzzKey is a fixed key (the seeds are the same every run).
func fuzzKey(t testing.TB, b byte) (crypto.PrivKey, peer.ID) {
	t.Helper()
	k, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, id
}

// feedPageSeeds are 1.1.0 answers as a server writes them, each with the
// request it answers: a head, a page of envelopes, a digest page, an own
// page, a want, a refusal, an end of stream.
func feedPageSeeds(t testing.TB, key crypto.PrivKey) []struct {
	page []byte
	req  feedRequest
} {
	t.Helper()
	var envs [][]byte
	for i := range 3 {
		_, env := sealRecord(t, key, fmt.Sprintf("bot-%d", i), 1, fuzzClock.Add(-time.Minute), time.Hour, "a fuzz seed")
		envs = append(envs, env)
	}
	digests := make([][]byte, len(envs))
	for i, env := range envs {
		d := envelopeDigest(env)
		digests[i] = d[:]
	}
	page := func(h feedHeader, frames [][]byte) []byte {
		h.Count = len(frames)
		line, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		if err := writeFeedPage(w, line, frames); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	refusal, _ := json.Marshal(syncRefusal{Refused: "sync serving budget: at most 2 sync streams at once per peer"})
	return []struct {
		page []byte
		req  feedRequest
	}{
		{page(feedHeader{Feed: "feed-1", Next: 3, More: true}, nil), feedRequest{Limit: 0}},
		{page(feedHeader{Feed: "feed-1", Next: 3}, envs), feedRequest{Limit: syncPageSize}},
		{page(feedHeader{Feed: "feed-1", Next: 3, More: true, Digest: true}, digests), feedRequest{Limit: syncPageSize, Digest: true}},
		{page(feedHeader{Feed: "feed-1", Own: true, Digest: true, NextID: "abc", More: true}, digests), feedRequest{Limit: syncPageSize, Own: true, Digest: true}},
		{page(feedHeader{Feed: "feed-1", Next: 3}, envs[:1]), feedRequest{Limit: syncPageSize, Want: []string{"x", "y"}}},
		{refusal, feedRequest{Limit: syncPageSize}},
		{nil, feedRequest{Limit: syncPageSize}},
	}
}

// fuzzRequest is one of the requests a client sends, by number.
func fuzzRequest(kind uint8) feedRequest {
	switch kind % 5 {
	case 0:
		return feedRequest{Limit: 0}
	case 1:
		return feedRequest{Limit: syncPageSize}
	case 2:
		return feedRequest{Limit: syncPageSize, Digest: true}
	case 3:
		return feedRequest{Limit: syncPageSize, Own: true, Digest: true}
	}
	return feedRequest{Limit: syncPageSize, Want: []string{"a", "b", "c"}}
}

// requestKind is fuzzRequest's inverse for the seeds.
func requestKind(req feedRequest) uint8 {
	switch {
	case req.Limit == 0:
		return 0
	case req.Want != nil:
		return 4
	case req.Own:
		return 3
	case req.Digest:
		return 2
	}
	return 1
}

// FuzzReadFeedPage feeds arbitrary bytes to the 1.1.0 client's page
// reader, as the answer to each kind of request. It must not panic nor
// read past what it reports; a page it accepts holds the protocol's
// bounds (the caller verifies each envelope next); a refusal is only ever
// ErrRefused, and every other error that is the peer's fault wraps
// errBadPage or agent.ErrTooLarge (those count against the peer).
func FuzzReadFeedPage(f *testing.F) {
	key, _ := fuzzKey(f, 9)
	for _, s := range feedPageSeeds(f, key) {
		f.Add(requestKind(s.req), s.page)
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		req := fuzzRequest(kind)
		r := bufio.NewReaderSize(bytes.NewReader(data), maxFeedHeader)
		resp, read, err := readFeedPage(r, req)
		if read > len(data) {
			t.Fatalf("read %d of %d bytes", read, len(data))
		}
		if err != nil {
			if resp.Envelopes != nil || resp.Feed != "" {
				t.Fatalf("an error (%v) with a page", err)
			}
			return
		}
		switch {
		case len(resp.Envelopes) > syncPageSize:
			t.Fatalf("a page of %d records", len(resp.Envelopes))
		case req.Limit == 0 && len(resp.Envelopes) > 0:
			t.Fatalf("a head request answered with %d records", len(resp.Envelopes))
		case req.Want != nil && len(resp.Envelopes) > len(req.Want):
			t.Fatalf("%d records for %d wanted", len(resp.Envelopes), len(req.Want))
		case resp.Digest && !req.Digest, resp.Own && !req.Own:
			t.Fatalf("a page not asked for accepted: %+v", resp)
		case resp.Feed == "" || len(resp.Feed) > 64 || resp.Next < 0 || len(resp.NextID) > maxOwnID:
			t.Fatalf("a page without a valid feed or cursor accepted: feed %q next %d next_id %q", resp.Feed, resp.Next, resp.NextID)
		}
		for _, env := range resp.Envelopes {
			if len(env) == 0 || len(env) > agent.MaxRecordBytes || (resp.Digest && len(env) != digestSize) {
				t.Fatalf("a frame of %d bytes accepted (digest page: %v)", len(env), resp.Digest)
			}
		}
	})
}

// FuzzDecodeSyncPage feeds arbitrary bytes to the 1.0.0 client's page
// reader. It must not panic; a line too long is bufio.ErrBufferFull, a
// line that is not a page errBadPage, a refusal ErrRefused.
func FuzzDecodeSyncPage(f *testing.F) {
	key, _ := fuzzKey(f, 11)
	var envs [][]byte
	for i := range 3 {
		_, env := sealRecord(f, key, fmt.Sprintf("bot-%d", i), 1, fuzzClock.Add(-time.Minute), time.Hour, "a fuzz seed")
		envs = append(envs, env)
	}
	for _, resp := range []syncResponse{{Envelopes: envs, Next: 3}, {Envelopes: envs[:1]}, {}} {
		b, err := json.Marshal(resp)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(b, '\n'))
	}
	refusal, _ := json.Marshal(syncRefusal{Refused: "sync serving budget: over 4194304 bytes/s a peer"})
	f.Add(refusal)
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, err := decodeSyncPage(bufio.NewReaderSize(bytes.NewReader(data), maxSyncResponse))
		if err != nil {
			if resp.Envelopes != nil || resp.Next != 0 {
				t.Fatalf("an error (%v) with a page", err)
			}
			if errors.Is(err, ErrRefused) && !bytes.HasPrefix(data, []byte(`{"refused":`)) {
				t.Fatalf("a refusal read from %q", data)
			}
			return
		}
		if bytes.IndexByte(data, '\n') < 0 {
			t.Fatalf("a page accepted without its newline: %q", data)
		}
	})
}

// TestFuzzSeedsAreValid: the seeds are what honest peers send, so the
// fuzzers start from inputs that pass every check (a mutation then
// reaches the deepest ones).
func TestFuzzSeedsAreValid(t *testing.T) {
	fkey, _ := fuzzKey(t, 9)
	for i, s := range feedPageSeeds(t, fkey) {
		_, _, err := readFeedPage(bufio.NewReaderSize(bytes.NewReader(s.page), maxFeedHeader), s.req)
		switch {
		case len(s.page) == 0 || bytes.HasPrefix(s.page, []byte(`{"refused"`)):
			if err == nil {
				t.Errorf("feed seed %d (a refusal or nothing) read as a page", i)
			}
		case err != nil:
			t.Errorf("feed seed %d refused: %v", i, err)
		}
	}
}
