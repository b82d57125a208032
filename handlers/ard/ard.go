// Package ard serves this node's catalogue as an ARD registry (Agentic
// Resource Discovery, ards-project/ard-spec v0.9): POST /search, GET
// /agents and POST /explore under the node's ARD base path (/ard), on the
// same search index as AgentHub and /api/v1/agents.
//
// Federation: in mode "auto" a node answers from its mirror and says how
// complete the mirror is (the catalogue-sync shards filled to their end
// from some peer). With "federate": true it also asks the DHT, within a
// deadline, for what the mirror may lack: the providers of the asked tags
// (their listings pulled through catalogue sync) and the records of the
// asked URNs; results that arrived that way are marked "source": "dht".
//
// score is a match score from 0 to 100 (how well the listing matches the
// query, whether it answers now); it is never a measure of trust.
package ard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// BasePath is where the registry is mounted.
const BasePath = "/ard"

// Bounds of a request.
const (
	maxBodyBytes = 16 << 10
	// DefaultDeadline and MaxDeadline bound a federated search's DHT
	// round.
	DefaultDeadline = 5 * time.Second
	MaxDeadline     = 15 * time.Second
	// maxFederations is how many federated searches the node runs at
	// once; more are answered from the mirror, saying so.
	maxFederations = 4
	// maxFederatedTags and maxFederatedURNs bound what one search asks
	// the DHT.
	maxFederatedTags = 4
	maxFederatedURNs = 8
	// maxProviders is the tag providers one tag's look-up syncs from.
	maxProviders = 20
	// maxVerifiedScan bounds the listings a verified-only search reads.
	maxVerifiedScan = 2000
	// completenessTTL is how long the mirror's completeness is reused.
	completenessTTL = 10 * time.Second
)

// Federation modes (ARD §7.2).
const (
	ModeAuto      = "auto"
	ModeReferrals = "referrals"
	ModeNone      = "none"
)

// Sources of a result.
const (
	SourceMirror = "mirror"
	SourceDHT    = "dht"
)

// Catalog is what the registry reads.
type Catalog interface {
	SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error)
	GetAgent(ctx context.Context, id string) (store.Listing, error)
	TagFacets(ctx context.Context, q store.SearchQuery, limit int) ([]store.TagCount, error)
	CountByStatus(ctx context.Context) (map[string]int, error)
	SyncCursor(ctx context.Context, peer string, shard int) (feed string, after int64, complete bool, err error)
}

// Network is the DHT side of a federated search.
type Network interface {
	// SearchTag asks the DHT who provides tag and pulls those providers'
	// listings into the cache.
	SearchTag(ctx context.Context, tag string, maxProviders int) (providers, changed int, err error)
	PeerCount() int
}

// Finder loads a listing by id, asking the DHT when the cache lacks it
// (registry.Find).
type Finder interface {
	Find(ctx context.Context, id string) (store.Listing, error)
}

// Publishers says which domains a publisher proved (agent/verify; its
// heartbeats carry them). nil: no publisher is verified.
type Publishers interface {
	Domains(publisher string) []string
}

// Handler serves the registry.
type Handler struct {
	Catalog    Catalog
	Network    Network // nil: no federation
	Finder     Finder  // nil: no URN look-ups
	Publishers Publishers
	// PublicURL is --public-url ("": the request's origin).
	PublicURL string
	Now       func() time.Time
	// Fail answers a server fault (logged, never leaked).
	Fail func(w http.ResponseWriter, r *http.Request, err error)

	fed chan struct{}

	mu        sync.Mutex
	mirror    Mirror
	mirrorAt  time.Time
	mirrorSet bool
}

// New is a Handler; set its optional fields before serving.
func New(c Catalog, n Network, f Finder, publicURL string, fail func(http.ResponseWriter, *http.Request, error)) *Handler {
	return &Handler{Catalog: c, Network: n, Finder: f, PublicURL: publicURL, Now: time.Now, Fail: fail,
		fed: make(chan struct{}, maxFederations)}
}

// SearchRequest is the body of POST /search.
type SearchRequest struct {
	Query   string  `json:"query"`
	Filters Filters `json:"filters"`
	Limit   int     `json:"limit,omitempty"`
	Cursor  string  `json:"cursor,omitempty"`
	// Federation is auto (default), referrals or none.
	Federation string `json:"federation,omitempty"`
	// Federate asks the DHT as well (mode auto).
	Federate bool `json:"federate,omitempty"`
	// DeadlineMS bounds the DHT round (default 5000, at most 15000).
	DeadlineMS int `json:"deadline_ms,omitempty"`
}

// Filters narrow a search.
type Filters struct {
	Status   []string `json:"status,omitempty"`
	Health   []string `json:"health,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Verified *bool    `json:"verified,omitempty"`
	// URN asks for listings by URN (looked up in the DHT when federated
	// and the mirror lacks them).
	URN []string `json:"urn,omitempty"`
}

// SearchResponse is the answer of POST /search and GET /agents.
type SearchResponse struct {
	Results    []Resource `json:"results"`
	Count      int        `json:"count"`
	NextCursor string     `json:"next_cursor,omitempty"`
	Federation Federation `json:"federation"`
}

// Resource is one listing as a registry entry.
type Resource struct {
	URN         string     `json:"urn"`
	Aliases     []string   `json:"aliases,omitempty"`
	Type        string     `json:"type"`
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	DisplayName string     `json:"display_name,omitempty"`
	Description string     `json:"description"`
	Version     string     `json:"version,omitempty"`
	Tags        []string   `json:"tags"`
	Skills      []Skill    `json:"skills,omitempty"`
	Endpoints   Endpoints  `json:"endpoints"`
	Status      string     `json:"status"`
	Health      string     `json:"health"`
	Publisher   Publisher  `json:"publisher"`
	Score       int        `json:"score"`
	Source      string     `json:"source"`
	UpdatedAt   time.Time  `json:"updated_at"`
	Links       []LinkJSON `json:"links,omitempty"`
}

// Skill is one of an agent's skills.
type Skill struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Endpoints are where the resource is reached.
type Endpoints struct {
	A2ACard    string `json:"a2a_card"`
	MCP        string `json:"mcp"`
	ServerCard string `json:"mcp_server_card"`
	Page       string `json:"page"`
}

// Publisher is who signed the listing and which domains it proved.
type Publisher struct {
	PeerID   string   `json:"peer_id"`
	Host     string   `json:"host"`
	Verified bool     `json:"verified"`
	Domains  []string `json:"domains,omitempty"`
}

// LinkJSON is a typed link.
type LinkJSON struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
	Type string `json:"type,omitempty"`
}

// Federation says where an answer came from and how complete it is.
type Federation struct {
	Mode      string  `json:"mode"`
	Federated bool    `json:"federated"`
	Mirror    Mirror  `json:"mirror"`
	DHT       *DHTRun `json:"dht,omitempty"`
	Note      string  `json:"note,omitempty"`
}

// Mirror is how complete this node's copy of the planet's catalogue is.
type Mirror struct {
	// Listings held that search shows (online and stale).
	Listings int `json:"listings"`
	// ShardsSynced of Shards catalogue-sync shards were read to their end
	// from some peer; Complete when all were (and the node has peers).
	ShardsSynced int  `json:"shards_synced"`
	Shards       int  `json:"shards"`
	Complete     bool `json:"complete"`
	Peers        int  `json:"peers"`
}

// DHTRun is what a federated search asked the DHT and what came of it.
type DHTRun struct {
	Tags       []string `json:"tags,omitempty"`
	URNs       []string `json:"urns,omitempty"`
	Providers  int      `json:"providers"`
	Records    int      `json:"records"`
	Found      int      `json:"found"`
	DeadlineMS int      `json:"deadline_ms"`
	ElapsedMS  int64    `json:"elapsed_ms"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	Errors     []string `json:"errors,omitempty"`
}

// syncShards is the catalogue sync's shard count (p2p/sync_feed.go).
const syncShards = 8

// Errors: the API's {"error": {code, message, fields}}.
func (h *Handler) bad(w http.ResponseWriter, field, msg string) {
	httpkit.WriteJSONError(w, &httpkit.Error{Status: http.StatusBadRequest, Code: httpkit.CodeBadQuery,
		Message: "The search is invalid; see fields.", Fields: map[string]string{field: msg}})
}

// badQuery answers a search the store's validation refused.
func (h *Handler) badQuery(w http.ResponseWriter, err error) {
	var e *httpkit.Error
	if errors.As(httpkit.BadQuery(err), &e) {
		httpkit.WriteJSONError(w, e)
		return
	}
	h.bad(w, "query", err.Error())
}

func (h *Handler) fault(w http.ResponseWriter, r *http.Request, err error) {
	e := httpkit.Classify(err)
	if e == httpkit.ErrInternal && h.Fail != nil {
		h.Fail(w, r, err)
		return
	}
	httpkit.WriteJSONError(w, e)
}

// Search is POST /search.
func (h *Handler) Search(w http.ResponseWriter, r *http.Request) {
	var req SearchRequest
	if err := decodeBody(r, &req); err != nil {
		httpkit.WriteJSONError(w, err)
		return
	}
	h.answer(w, r, req)
}

// decodeBody reads a JSON body of at most maxBodyBytes into v; an empty
// body is an empty request. Unknown fields are ignored: the spec's
// requests may carry fields this registry does not use.
func decodeBody(r *http.Request, v any) *httpkit.Error {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	switch {
	case err != nil:
		return httpkit.Errorf(http.StatusBadRequest, httpkit.CodeBadJSON, "The body could not be read; send it again.")
	case len(raw) > maxBodyBytes:
		return httpkit.Errorf(http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("A request is at most %d KiB.", maxBodyBytes>>10))
	case len(strings.TrimSpace(string(raw))) == 0:
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return httpkit.Errorf(http.StatusBadRequest, httpkit.CodeBadJSON, "The body is not a JSON request of this route: "+err.Error())
	}
	return nil
}

// List is GET /agents?q&tag&status&health&verified&limit&cursor.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	req := SearchRequest{Query: v.Get("q"), Cursor: v.Get("cursor"), Federation: ModeNone,
		Filters: Filters{Status: v["status"], Health: v["health"], Tags: v["tag"], URN: v["urn"]}}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			h.bad(w, "limit", fmt.Sprintf("must be a number from 1 to %d", store.MaxLimit))
			return
		}
		req.Limit = n
	}
	if s := v.Get("verified"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			h.bad(w, "verified", "must be true or false")
			return
		}
		req.Filters.Verified = &b
	}
	h.answer(w, r, req)
}

// query turns a request into the store's search, with the portal's and
// the API's validation (httpkit.ParseSearchQuery).
func (h *Handler) query(req SearchRequest) (store.SearchQuery, error) {
	v := url.Values{}
	if req.Query != "" {
		v.Set("q", req.Query)
	}
	if req.Cursor != "" {
		v.Set("cursor", req.Cursor)
	}
	if req.Limit != 0 {
		v.Set("limit", strconv.Itoa(req.Limit))
	}
	v["tag"] = req.Filters.Tags
	v["status"] = req.Filters.Status
	v["health"] = req.Filters.Health
	return httpkit.ParseSearchQuery(v)
}

func (h *Handler) answer(w http.ResponseWriter, r *http.Request, req SearchRequest) {
	ctx := r.Context()
	q, err := h.query(req)
	if err != nil {
		h.badQuery(w, err)
		return
	}
	mode := req.Federation
	switch mode {
	case "":
		mode = ModeAuto
	case ModeAuto, ModeNone, ModeReferrals:
	default:
		h.bad(w, "federation", "must be auto, referrals or none")
		return
	}
	if req.Federate && mode != ModeAuto {
		h.bad(w, "federate", "needs federation auto")
		return
	}
	if len(req.Filters.URN) > maxFederatedURNs {
		h.bad(w, "filters.urn", fmt.Sprintf("at most %d URNs", maxFederatedURNs))
		return
	}
	var ids []string
	for _, u := range req.Filters.URN {
		if err := checkURN(u); err != nil {
			h.bad(w, "filters.urn", err.Error())
			return
		}
		id, _ := ParseURN(u)
		ids = append(ids, id)
	}
	deadline := DefaultDeadline
	if req.DeadlineMS != 0 {
		if req.DeadlineMS < 1 || time.Duration(req.DeadlineMS)*time.Millisecond > MaxDeadline {
			h.bad(w, "deadline_ms", fmt.Sprintf("must be 1 to %d", MaxDeadline.Milliseconds()))
			return
		}
		deadline = time.Duration(req.DeadlineMS) * time.Millisecond
	}
	verifiedOnly := req.Filters.Verified != nil && *req.Filters.Verified

	out := SearchResponse{Results: []Resource{}, Federation: Federation{Mode: mode}}
	out.Federation.Mirror, err = h.mirrorState(ctx)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	origin := httpkit.Origin(r, h.PublicURL)
	seen := map[string]bool{}
	first, next, err := h.find(ctx, q, ids, verifiedOnly)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	for _, l := range first {
		seen[l.Record.ID] = true
	}
	listings := first
	fedAt := time.Time{}
	switch {
	case mode == ModeReferrals:
		// This node knows no other registry's HTTP address: the planet's
		// other registries are reached through the DHT (federate).
		out.Federation.Note = "no referrals: other nodes are reached through the DHT; ask with federation auto and federate true"
	case req.Federate && q.Cursor == "":
		run, fresh, ok := h.federate(ctx, req, q, ids, deadline)
		out.Federation.DHT = run
		if !ok {
			out.Federation.Note = "the node is running as many federated searches as it allows; this answer is the mirror's alone"
			break
		}
		out.Federation.Federated = true
		fedAt = fresh
		if listings, next, err = h.find(ctx, q, ids, verifiedOnly); err != nil {
			h.fault(w, r, err)
			return
		}
	case req.Federate:
		out.Federation.Note = "only a first page (no cursor) is federated; later pages come from the mirror"
	}
	for _, l := range listings {
		res := h.resource(l, origin, q.Q)
		if out.Federation.Federated && !seen[l.Record.ID] && !l.UpdatedAt.Before(fedAt) {
			res.Source = SourceDHT
			out.Federation.DHT.Found++
		}
		out.Results = append(out.Results, res)
	}
	sortByScore(out.Results)
	out.Count = len(out.Results)
	out.NextCursor = next
	w.Header().Set("Cache-Control", "no-store")
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// find is one page of q (or the listings of ids, when given), verified
// publishers' only when verifiedOnly.
func (h *Handler) find(ctx context.Context, q store.SearchQuery, ids []string, verifiedOnly bool) ([]store.Listing, string, error) {
	if len(ids) > 0 {
		var out []store.Listing
		for _, id := range ids {
			got, err := h.byID(ctx, id)
			if err != nil {
				return nil, "", err
			}
			if got != nil && (!verifiedOnly || h.verified(got.Record.Publisher)) {
				out = append(out, *got)
			}
		}
		return out, "", nil
	}
	if !verifiedOnly {
		page, err := h.Catalog.SearchAgents(ctx, q)
		return page.Listings, page.NextCursor, err
	}
	// Verified publishers are few next to the catalogue: read pages until
	// the limit is met, each page no longer than what is still missing (so
	// the cursor stays exact), within maxVerifiedScan listings.
	var out []store.Listing
	limit, scanned := q.Limit, 0
	for {
		q.Limit = limit - len(out)
		page, err := h.Catalog.SearchAgents(ctx, q)
		if err != nil {
			return nil, "", err
		}
		scanned += len(page.Listings)
		for _, l := range page.Listings {
			if h.verified(l.Record.Publisher) {
				out = append(out, l)
			}
		}
		q.Cursor = page.NextCursor
		if len(out) >= limit || page.NextCursor == "" || scanned >= maxVerifiedScan || ctx.Err() != nil {
			return out, page.NextCursor, nil
		}
	}
}

// byID is the listing of id from the mirror only (nil when it lacks it).
func (h *Handler) byID(ctx context.Context, id string) (*store.Listing, error) {
	l, err := h.Catalog.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case l.Record.Tombstone:
		return nil, nil
	}
	return &l, nil
}

func (h *Handler) verified(publisher string) bool {
	return h.Publishers != nil && len(h.Publishers.Domains(publisher)) > 0
}

// federate asks the DHT for the providers of the search's tags (the
// filters' tags, else the query's words that are tags) and for the
// records of its URNs the mirror lacks, within deadline. ok is false
// when the node runs as many federations as it allows. started is when
// the round began: listings that changed after it came from it.
func (h *Handler) federate(ctx context.Context, req SearchRequest, q store.SearchQuery, ids []string, deadline time.Duration) (run *DHTRun, started time.Time, ok bool) {
	run = &DHTRun{DeadlineMS: int(deadline.Milliseconds())}
	if h.Network == nil {
		run.Errors = append(run.Errors, "this node has no DHT")
		return run, time.Time{}, true
	}
	select {
	case h.fed <- struct{}{}:
		defer func() { <-h.fed }()
	default:
		return run, time.Time{}, false
	}
	started = h.Now()
	// Some clocks move coarsely: a listing written in the same tick
	// counts as arriving with the round.
	started = started.Add(-time.Millisecond)
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	run.Tags = federatedTags(q)
	run.URNs = append(run.URNs, req.Filters.URN...)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, tag := range run.Tags {
		wg.Go(func() {
			p, c, err := h.Network.SearchTag(ctx, tag, maxProviders)
			mu.Lock()
			defer mu.Unlock()
			run.Providers += p
			run.Records += c
			if err != nil {
				run.Errors = append(run.Errors, "tag "+tag+": "+err.Error())
			}
		})
	}
	if h.Finder != nil {
		for i, id := range ids {
			wg.Go(func() {
				if l, _ := h.byID(ctx, id); l != nil {
					return // the mirror has it
				}
				_, err := h.Finder.Find(ctx, id)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					run.Errors = append(run.Errors, "urn "+req.Filters.URN[i]+": not found in the DHT")
					return
				}
				run.Records++
			})
		}
	}
	wg.Wait()
	run.ElapsedMS = h.Now().Sub(started).Milliseconds()
	run.TimedOut = ctx.Err() != nil
	return run, started, true
}

// federatedTags is what a search asks tag providers for: its tag filters,
// else the words of its query that are tags, at most maxFederatedTags.
func federatedTags(q store.SearchQuery) []string {
	tags := append([]string(nil), q.Tags...)
	if len(tags) == 0 {
		for _, w := range strings.Fields(strings.ToLower(q.Q)) {
			if agent.IsSlug(w, 1, agent.MaxTagLen) {
				tags = append(tags, w)
			}
		}
	}
	if len(tags) > maxFederatedTags {
		tags = tags[:maxFederatedTags]
	}
	return tags
}

// mirrorState is how complete the mirror is, reused for completenessTTL.
func (h *Handler) mirrorState(ctx context.Context) (Mirror, error) {
	h.mu.Lock()
	if h.mirrorSet && h.Now().Sub(h.mirrorAt) < completenessTTL {
		m := h.mirror
		h.mu.Unlock()
		return m, nil
	}
	h.mu.Unlock()
	m := Mirror{Shards: syncShards}
	counts, err := h.Catalog.CountByStatus(ctx)
	if err != nil {
		return m, err
	}
	m.Listings = counts[store.StatusOnline] + counts[store.StatusStale]
	for shard := range syncShards {
		// The cursor of no peer ("") says a shard was filled from some
		// peer (p2p/sync_feed.go).
		_, _, complete, err := h.Catalog.SyncCursor(ctx, "", shard)
		if err != nil {
			return m, err
		}
		if complete {
			m.ShardsSynced++
		}
	}
	if h.Network != nil {
		m.Peers = h.Network.PeerCount()
	}
	m.Complete = m.ShardsSynced == m.Shards && m.Peers > 0
	h.mu.Lock()
	h.mirror, h.mirrorAt, h.mirrorSet = m, h.Now(), true
	h.mu.Unlock()
	return m, nil
}
