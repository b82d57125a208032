package store

import (
	"context"
	"strings"

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
