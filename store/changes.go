package store

import (
	"context"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// IndexDoc is a listing as the in-process search index (store/searchindex)
// keeps it: what a search matches and filters on, the listing's position
// (first-seen order, the keyset of every search order) and the change
// number of the row's last change that a search can see.
type IndexDoc struct {
	Pos       int64
	ChangeSeq int64
	Tombstone bool
	Status    string // online | stale | offline
	Health    string // the health state (agent.Health*)
	Owner     string
	Tags      []string
	// The text a search matches: Name and DisplayName (the title tier),
	// Tags (the head tier), Description and SkillsText (SkillsText of the
	// record's skills) too (everywhere).
	Name, DisplayName, Description, SkillsText string
}

// PosListing is a listing with its position and change number.
type PosListing struct {
	Listing
	Pos       int64
	ChangeSeq int64
}

// ChangeFeed is an engine whose listings carry a change number: every
// insert of a listing, and every update that changes what IndexDoc holds
// (text, tags, owner, status, health state, tombstone), gives its row a
// new number larger than any the engine gave before (migration 0006). An
// update that changes none of those (a heartbeat's last_seen) gives none.
// The in-process search index reads it to stay in step with every writer
// of the database, this process or another one on the same database.
//
// On Postgres a number is taken when the row is written and becomes
// visible when its transaction commits, so numbers can appear out of
// order: a reader that saw up to n asks again later for the numbers it
// did not see below n (also).
type ChangeFeed interface {
	// ListingChanges returns the listings whose change number is greater
	// than after or is one of also, tombstones included, in change number
	// order, at most limit (NormalizeLimit does not apply: 1..10,000).
	ListingChanges(ctx context.Context, after int64, also []int64, limit int) ([]IndexDoc, error)
	// ListingsAt returns the listings at positions pos (tombstones too;
	// positions with no listing are left out; any order), each with its
	// change number and with PublicJSON filled. publicOnly as in
	// SearchQuery.PublicOnly.
	ListingsAt(ctx context.Context, pos []int64, publicOnly bool) ([]PosListing, error)
}

// MaxChanges bounds one ListingChanges call.
const MaxChanges = 10_000

// SkillsText flattens skills into the text a search matches: each
// skill's id, name, description and examples, one per line.
func SkillsText(skills []agent.Skill) string {
	var b strings.Builder
	for _, s := range skills {
		b.WriteString(s.ID)
		b.WriteByte('\n')
		b.WriteString(s.Name)
		b.WriteByte('\n')
		b.WriteString(s.Description)
		b.WriteByte('\n')
		for _, ex := range s.Examples {
			b.WriteString(ex)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// SyncFeed serves incremental catalogue sync (p2p's /agentsite/sync/1.1.0)
// and keeps where this node got to in each peer's feed. The feed is
// agent_sync (migration 0008): every insert of a listing and every new seq
// (a new signed envelope) gives its row a sync number larger than any
// before; status and health changes give none (unlike ChangeFeed's
// numbers, which follow what the search index holds).
type SyncFeed interface {
	// FeedID names this database's change feed: a cursor taken in one
	// feed means nothing in another (a database made again).
	FeedID(ctx context.Context) (string, error)
	// SyncChanges reads the signed envelopes of the listings whose sync
	// number is above after, in sync number order, whose id is in
	// [lo, hi) (hi "" is no bound), that are still valid at now
	// (tombstones included): at most limit of them, from at most
	// MaxSyncScan numbers. next is the sync number to continue after
	// (after itself when nothing new is settled); more says whether
	// anything may follow now. Numbers are handed out only up to the
	// feed's settled horizon (Postgres: no transaction that took a lower
	// number is still running), so a reader that continues after next
	// misses nothing. limit 0 returns no envelopes and next = the feed's
	// head, with more set while the head is not settled yet.
	SyncChanges(ctx context.Context, after int64, lo, hi string, limit int, now time.Time) (envs [][]byte, next int64, more bool, err error)
	// SyncCursor is where this node got to in peer's feed for shard:
	// feed is "" when there is no cursor.
	SyncCursor(ctx context.Context, peer string, shard int) (feed string, after int64, complete bool, err error)
	// SetSyncCursor stores it.
	SetSyncCursor(ctx context.Context, peer string, shard int, feed string, after int64, complete bool, at time.Time) error
	// PruneSyncCursors drops the cursors not written since before (peers
	// gone for good), and returns how many went.
	PruneSyncCursors(ctx context.Context, before time.Time) (int, error)
}

// MaxSyncScan bounds the changes one SyncChanges call reads, whatever its
// id range matches: a page of a narrow shard ends early rather than walk
// the whole feed.
const MaxSyncScan = 4096
