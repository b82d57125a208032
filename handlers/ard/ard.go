// Package ard serves this node's catalogue as an ARD registry (Agentic
// Resource Discovery, ards-project/ard-spec, spec/schemas/ard.openapi.yaml):
// POST /search, GET /agents and POST /explore under the node's ARD base
// path (/ard), on the same search index as AgentHub and /api/v1/agents.
// Every listing is two catalog entries: its A2A card and its MCP server
// card (filter "type" picks; the A2A card by default).
//
// Federation: in mode "auto" a node answers from its mirror and says how
// complete the mirror is (the AgentSite-Mirror header: the catalogue-sync
// shards filled to their end from some peer). With the extension field
// "federate": true it also asks the DHT, within a deadline, for what the
// mirror may lack: the providers of the asked tags (their listings pulled
// through catalogue sync) and the records of the asked identifiers;
// results that arrived that way carry metadata "agentsite.via": "dht", and
// the AgentSite-Federation header says what the round did. The round
// runs with a search's first page; the page token carries its time
// window, so the later pages continue over the mirror it filled, each
// listing once, still marked (paging.go). In mode "referrals" the node
// answers from its mirror and names, as referrals, the registries of
// other nodes it hears that announce an HTTP address (referral.go).
//
// score is a match score from 0 to 100 (how well the entry matches the
// text, whether it answers now); it is never a measure of trust.
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
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// BasePath is where the registry is mounted.
const BasePath = "/ard"

// Bounds of a request.
const (
	maxBodyBytes = 16 << 10
	// DefaultPageSize is the spec's default for /search (GET /agents: 20).
	DefaultPageSize = 10
	// A federated search's DHT round, its identifiers, and the listings a
	// filtered search reads are bounded by the node's one set of search
	// limits (discover.Limits).
	// completenessTTL is how long the mirror's completeness is reused.
	completenessTTL = 10 * time.Second
)

// Federation modes (ARD §8).
const (
	ModeAuto      = "auto"
	ModeReferrals = "referrals"
	ModeNone      = "none"
)

// Via says how a result reached this node's answer (metadata
// "agentsite.via").
const (
	ViaMirror = "mirror"
	ViaDHT    = "dht"
)

// Catalog is what the registry reads besides searches (which go through
// discover).
type Catalog interface {
	TagFacets(ctx context.Context, q store.SearchQuery, limit int) ([]store.TagCount, error)
	CountByStatus(ctx context.Context) (map[string]int, error)
	SyncCursor(ctx context.Context, peer string, shard int) (feed string, after int64, complete bool, err error)
}

// Network is how many peers the node has (the mirror's header); the DHT
// rounds are discover's.
type Network interface {
	PeerCount() int
}

// Publishers says which domains a publisher proved (agent/verify; its
// heartbeats carry them). nil: no publisher is verified.
type Publishers interface {
	Domains(publisher string) []string
}

// generational is a Publishers whose answers change only with its
// generation: a memoized search keys on it, so a search from the mirror
// alone stays memoized while publishers are verified.
type generational interface {
	Generation() uint64
}

// publishersKey is what a memoized answer depends on of Publishers, and
// false when it cannot be memoized (answers that change unannounced).
func (h *Handler) publishersKey() (string, bool) {
	switch p := h.Publishers.(type) {
	case nil:
		return "", true
	case generational:
		return "v" + strconv.FormatUint(p.Generation(), 10), true
	}
	return "", false
}

// Handler serves the registry.
type Handler struct {
	// Discover answers the searches and runs the federated rounds (their
	// limits are its).
	Discover   *discover.Discover
	Catalog    Catalog
	Network    Network // nil: no peers to count
	Publishers Publishers
	// Nodes is what the node heard of the planet's other nodes, for
	// federation "referrals" (nil: it refers to none); Self is this
	// node's peer id, never referred to.
	Nodes Nodes
	Self  string
	// ReferAfter is how long a node must have been seen online before it
	// is referred to (a few heartbeat intervals; 0: at once).
	ReferAfter time.Duration
	// PublicURL is --public-url ("": the request's origin).
	PublicURL string
	Now       func() time.Time
	// Fail answers a server fault (logged, never leaked).
	Fail func(w http.ResponseWriter, r *http.Request, err error)

	mu        sync.Mutex
	mirror    Mirror
	mirrorAt  time.Time
	mirrorSet bool
	referAges map[string]time.Time // peer id → first seen online (referrals)
}

// New is a Handler; set its optional fields before serving. A catalog
// that also keeps node rows (store.Store) is its Nodes, and a network
// that names its peer id (p2p.Node) its Self, for referrals.
func New(d *discover.Discover, c Catalog, n Network, publicURL string, fail func(http.ResponseWriter, *http.Request, error)) *Handler {
	h := &Handler{Discover: d, Catalog: c, Network: n, PublicURL: publicURL, Now: time.Now, Fail: fail}
	if nodes, ok := c.(Nodes); ok {
		h.Nodes = nodes
	}
	if self, ok := n.(interface{ PeerID() string }); ok {
		h.Self = self.PeerID()
	}
	return h
}

// QueryModel is ARD §7.1's query: text and a filter of field paths.
type QueryModel struct {
	Text   string                     `json:"text"`
	Filter map[string]json.RawMessage `json:"filter,omitempty"`
}

// SearchRequest is the body of POST /search. Federate and DeadlineMS are
// AgentSite's extension of mode auto.
type SearchRequest struct {
	Query      *QueryModel `json:"query"`
	Federation string      `json:"federation,omitempty"`
	PageSize   int         `json:"pageSize,omitempty"`
	PageToken  string      `json:"pageToken,omitempty"`
	Federate   bool        `json:"federate,omitempty"`
	DeadlineMS int         `json:"deadlineMs,omitempty"`
}

// SearchResponse is the answer of POST /search.
type SearchResponse struct {
	Results   []Entry    `json:"results"`
	Referrals []Referral `json:"referrals,omitzero"` // [] in mode referrals: none
	PageToken string     `json:"pageToken,omitempty"`
}

// ListResponse is the answer of GET /agents.
type ListResponse struct {
	Items     []Entry `json:"items"`
	PageToken string  `json:"pageToken,omitempty"`
}

// Referral is another registry a client may ask.
type Referral struct {
	Identifier  string `json:"identifier"`
	DisplayName string `json:"displayName"`
	Type        string `json:"type"`
	URL         string `json:"url"`
}

// Mirror is how complete this node's copy of the planet's catalogue is
// (the AgentSite-Mirror header).
type Mirror struct {
	// Listings held that search shows (online and stale).
	Listings int
	// ShardsSynced of Shards catalogue-sync shards were read to their end
	// from some peer; Complete when all were (and the node has peers).
	ShardsSynced, Shards int
	Complete             bool
	Peers                int
}

// Header is m as a structured-field dictionary (RFC 8941).
func (m Mirror) Header() string {
	return fmt.Sprintf("listings=%d, shards-synced=%d, shards=%d, complete=%s, peers=%d",
		m.Listings, m.ShardsSynced, m.Shards, sfBool(m.Complete), m.Peers)
}

// DHTRun is what a federated search asked the DHT and what came of it
// (the AgentSite-Federation header).
type DHTRun struct {
	Tags        []string
	Identifiers int
	Providers   int
	Records     int
	Found       int
	Deadline    time.Duration
	Elapsed     time.Duration
	TimedOut    bool
	Errors      int
}

func sfBool(b bool) string {
	if b {
		return "?1"
	}
	return "?0"
}

// Header is the federation's outcome as a structured-field dictionary.
func federationHeader(mode string, run *DHTRun, note string) string {
	h := fmt.Sprintf("mode=%q, federated=%s", mode, sfBool(run != nil))
	if run != nil {
		h += fmt.Sprintf(", tags=%q, identifiers=%d, providers=%d, records=%d, found=%d, deadline-ms=%d, elapsed-ms=%d, timed-out=%s, errors=%d",
			strings.Join(run.Tags, " "), run.Identifiers, run.Providers, run.Records, run.Found,
			run.Deadline.Milliseconds(), run.Elapsed.Milliseconds(), sfBool(run.TimedOut), run.Errors)
	}
	if note != "" {
		h += fmt.Sprintf(", note=%q", note)
	}
	return h
}

// syncShards is the catalogue sync's shard count (p2p/catalogsync/feed.go).
const syncShards = 8

// ErrorBody is the spec's error (Appendix B).
type ErrorBody struct {
	ErrorCode string `json:"errorCode"`
	Message   string `json:"message"`
}

// Error codes (ARD Appendix B).
const (
	CodeInvalidArgument = "INVALID_ARGUMENT"
	CodeRateLimit       = "RATE_LIMIT_EXCEEDED"
	CodeInternal        = "INTERNAL_ERROR"
	CodeNotFound        = "NOT_FOUND"
)

func invalid(w http.ResponseWriter, format string, args ...any) {
	writeError(w, http.StatusBadRequest, CodeInvalidArgument, fmt.Sprintf(format, args...))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	httpkit.WriteJSON(w, status, ErrorBody{ErrorCode: code, Message: msg})
}

func (h *Handler) fault(w http.ResponseWriter, r *http.Request, err error) {
	e := httpkit.Classify(err)
	if e == httpkit.ErrInternal && h.Fail != nil {
		h.Fail(w, r, err)
		return
	}
	httpkit.SetRetryAfter(w, e)
	code := CodeInternal
	switch {
	case e.Status == http.StatusTooManyRequests:
		code = CodeRateLimit
	case e.Status == http.StatusBadRequest:
		code = CodeInvalidArgument
	}
	writeError(w, e.Status, code, e.Message)
}

// decodeBody reads a JSON body of at most maxBodyBytes into v; an empty
// body is an empty request. Unknown fields are refused: the spec's
// requests allow none, and a misspelt one would be silently dropped.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	switch {
	case err != nil:
		invalid(w, "The body could not be read; send it again.")
		return false
	case len(raw) > maxBodyBytes:
		writeError(w, http.StatusRequestEntityTooLarge, CodeInvalidArgument, fmt.Sprintf("A request is at most %d KiB.", maxBodyBytes>>10))
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			invalid(w, "The body is empty; send a JSON request with a query.")
		} else {
			invalid(w, "The body is not a request of this route: %v", err)
		}
		return false
	}
	return true
}

// search is a request as the registry runs it.
type search struct {
	q        store.SearchQuery
	types    []string // entry types asked for; empty: the A2A card
	ids      []string // listing ids named by identifier filters
	idURNs   []string
	keep     func(store.Listing) bool // filters the index cannot apply; nil: none
	verified bool
}

// parseFilter reads a query's filter into s (ARD §7.1: values are arrays
// or one string; OR within a key, AND across keys).
func (h *Handler) parseFilter(s *search, filter map[string]json.RawMessage) error {
	v := url.Values{}
	var publishers []string
	for key, raw := range filter {
		var vals []string
		var one string
		if err := json.Unmarshal(raw, &vals); err != nil {
			if err := json.Unmarshal(raw, &one); err != nil {
				var b bool
				if key != "verified" || json.Unmarshal(raw, &b) != nil {
					return fmt.Errorf("filter %q: give a string or an array of strings", key)
				}
				one = strconv.FormatBool(b)
			}
			vals = []string{one}
		}
		switch key {
		case "type":
			for _, t := range vals {
				if !knownType(t) {
					// A type no listing has: nothing matches.
					s.types = append(s.types, "")
					continue
				}
				s.types = append(s.types, t)
			}
		case "tags":
			if len(vals) > 1 {
				// OR within a key: the index ANDs tags, so an OR of tags
				// is refused rather than answered wrongly.
				return fmt.Errorf("filter \"tags\": one tag per search (the registry matches every listed tag, not any)")
			}
			v["tag"] = vals
		case "status", "metadata.agentsite.status":
			v["status"] = vals
		case "health", "metadata.agentsite.health":
			v["health"] = vals
		case "text": // GET /agents' displayName
			s.q.Q = strings.TrimSpace(s.q.Q + " " + strings.Join(vals, " "))
		case "publisher":
			publishers = append(publishers, vals...)
		case "verified", "metadata.agentsite.verified":
			if len(vals) != 1 || (vals[0] != "true" && vals[0] != "false") {
				return fmt.Errorf("filter \"verified\": true or false")
			}
			s.verified = vals[0] == "true"
		case "identifier":
			if most := h.Discover.Limits().Identifiers; len(vals) > most {
				return fmt.Errorf("filter \"identifier\": at most %d", most)
			}
			for _, u := range vals {
				id, ok := ParseURN(u)
				if !ok {
					return fmt.Errorf("filter \"identifier\": %q is not an AgentSite URN (urn:air:<peer id>:a2a:<name>)", u)
				}
				s.ids, s.idURNs = append(s.ids, id), append(s.idURNs, u)
			}
		default:
			return fmt.Errorf("filter %q is not supported here: use type, tags, publisher, identifier, status, health or verified", key)
		}
	}
	v.Set("q", s.q.Q)
	v.Set("cursor", s.q.Cursor)
	v.Set("limit", strconv.Itoa(s.q.Limit))
	q, err := httpkit.ParseSearchQuery(v)
	if err != nil {
		var ve *agent.ValidationError
		if errors.As(err, &ve) {
			var parts []string
			for f, m := range ve.Fields {
				parts = append(parts, f+": "+m)
			}
			return errors.New(strings.Join(parts, "; "))
		}
		return err
	}
	q.Sort = s.q.Sort
	s.q = q
	s.keep = h.keeper(publishers, s.verified)
	return nil
}

// keeper is the filter on publishers (peer ids or verified domains) and
// verification, which the index does not hold; nil when neither is asked.
func (h *Handler) keeper(publishers []string, verified bool) func(store.Listing) bool {
	if len(publishers) == 0 && !verified {
		return nil
	}
	return func(l store.Listing) bool {
		domains := h.domains(l.Record.Publisher)
		if verified && len(domains) == 0 {
			return false
		}
		if len(publishers) == 0 {
			return true
		}
		for _, p := range publishers {
			if p == l.Record.Publisher {
				return true
			}
			for _, d := range domains {
				if strings.EqualFold(p, d) {
					return true
				}
			}
		}
		return false
	}
}

func (h *Handler) domains(publisher string) []string {
	if h.Publishers == nil {
		return nil
	}
	return h.Publishers.Domains(publisher)
}

// Search is POST /search.
func (h *Handler) Search(w http.ResponseWriter, r *http.Request) {
	var req SearchRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Query == nil {
		invalid(w, "query is required: {\"query\": {\"text\": \"...\"}}")
		return
	}
	if req.PageSize == 0 {
		req.PageSize = DefaultPageSize
	}
	if req.PageSize < 1 || req.PageSize > store.MaxLimit {
		invalid(w, "pageSize must be 1 to %d", store.MaxLimit)
		return
	}
	mode := req.Federation
	switch mode {
	case "":
		mode = ModeAuto
	case ModeAuto, ModeNone, ModeReferrals:
	default:
		invalid(w, "federation must be auto, referrals or none")
		return
	}
	if req.Federate && mode != ModeAuto {
		invalid(w, "federate needs federation auto")
		return
	}
	var deadline time.Duration // 0: the node's default
	if req.DeadlineMS != 0 {
		most := h.Discover.Limits().MaxDeadline
		if req.DeadlineMS < 1 || time.Duration(req.DeadlineMS)*time.Millisecond > most {
			invalid(w, "deadlineMs must be 1 to %d", most.Milliseconds())
			return
		}
		deadline = time.Duration(req.DeadlineMS) * time.Millisecond
	}
	cursor, round, err := parseToken(req.PageToken)
	if err != nil {
		invalid(w, "%v", err)
		return
	}
	s := search{q: store.SearchQuery{Q: req.Query.Text, Cursor: cursor, Limit: req.PageSize}}
	if err := h.parseFilter(&s, req.Query.Filter); err != nil {
		invalid(w, "%v", err)
		return
	}
	ctx := r.Context()
	mirror, err := h.mirrorState(ctx)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	w.Header().Set("AgentSite-Mirror", mirror.Header())
	origin := httpkit.Origin(r, h.PublicURL)
	pubKey, memoizable := h.publishersKey()
	if memoizable && !req.Federate && round == nil && mode != ModeReferrals && s.keep == nil && len(s.ids) == 0 {
		// A search from the mirror alone is the same bytes until the
		// catalogue (or a publisher's verified domains) changes: kept by
		// the read cache, as /api/v1/agents.
		key := "ard/search\x00" + pubKey + "\x00" + origin + "\x00" + strings.Join(s.entryTypes(), ",")
		v, err := h.Discover.Answer(ctx, key, s.q, func(_ context.Context, r discover.Result) (any, error) {
			out := SearchResponse{Results: []Entry{}, PageToken: r.Page.NextCursor}
			h.appendResults(&out, r.Page.Listings, nil, origin, s)
			return json.Marshal(out)
		})
		if err != nil {
			h.fault(w, r, err)
			return
		}
		w.Header().Set("AgentSite-Federation", federationHeader(mode, nil, ""))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(v.([]byte))
		return
	}
	first, next, err := h.find(ctx, s)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	listings := first
	var run *DHTRun
	var note string
	var dht func(store.Listing) bool
	out := SearchResponse{Results: []Entry{}, PageToken: next}
	switch {
	case mode == ModeReferrals:
		var refs referralRun
		if out.Referrals, refs, err = h.referrals(ctx, first, privateOrigin(origin)); err != nil {
			h.fault(w, r, err)
			return
		}
		note = refs.note(h.Nodes != nil)
	case round != nil:
		// A later page of a federated walk: its round ran with the first
		// page (paging.go).
		dht = round.Brought
		out.PageToken = discover.ContinueWalk(next, *round)
		note = "a later page of a federated search: its DHT round ran with the first page, and what it brought is in the mirror (via dht)"
	case req.Federate && s.q.Cursor == "":
		var dr discover.Round
		var ok bool
		run, dr, ok = h.federate(ctx, s, deadline)
		if !ok {
			note = "busy: the node runs as many federated searches as it allows; this answer is the mirror's alone"
			break
		}
		if listings, next, err = h.find(ctx, s); err != nil {
			h.fault(w, r, err)
			return
		}
		before := make(map[string]bool, len(first))
		for _, l := range first {
			before[l.Record.ID] = true
		}
		dht = func(l store.Listing) bool { return !before[l.Record.ID] && dr.Brought(l) }
		out.PageToken = discover.WalkCursor(next, dr.Started, dr.Ended)
	case req.Federate:
		note = "this walk began without federation (its first page had no federate): its later pages come from the mirror"
	}
	found := h.appendResults(&out, listings, dht, origin, s)
	if run != nil {
		run.Found = found
	}
	hdr := federationHeader(mode, run, note)
	if round != nil {
		hdr += fmt.Sprintf(", continues=?1, found=%d", found)
	}
	if mode == ModeReferrals {
		hdr += fmt.Sprintf(", referrals=%d", len(out.Referrals))
	}
	w.Header().Set("AgentSite-Federation", hdr)
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// appendResults adds the entries of listings to out, scored and sorted;
// those dht says came from a federation round are marked so, and counted.
func (h *Handler) appendResults(out *SearchResponse, listings []store.Listing, dht func(store.Listing) bool, origin string, s search) (found int) {
	for _, l := range listings {
		via := ViaMirror
		if dht != nil && dht(l) {
			via = ViaDHT
			found++
		}
		for _, t := range s.entryTypes() {
			e := h.entry(l, origin, t, via)
			e.Score = score(l, len(h.domains(l.Record.Publisher)) > 0, s.q.Q)
			e.Source = origin + BasePath
			out.Results = append(out.Results, e)
		}
	}
	sortByScore(out.Results)
	return found
}

// entryTypes is the representations a search asked for (without a type
// filter, the A2A card; an unknown type matches nothing).
func (s search) entryTypes() []string {
	if len(s.types) == 0 {
		return []string{TypeA2A}
	}
	var out []string
	for _, t := range s.types {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// find is one page of the search (or the listings of its identifiers),
// with the filters the index cannot apply.
func (h *Handler) find(ctx context.Context, s search) ([]store.Listing, string, error) {
	if len(s.entryTypes()) == 0 {
		return nil, "", nil
	}
	if len(s.ids) > 0 {
		var out []store.Listing
		for _, id := range s.ids {
			l, err := h.Discover.Mirrored(ctx, id)
			if err != nil {
				return nil, "", err
			}
			if l != nil && (s.keep == nil || s.keep(*l)) {
				out = append(out, *l)
			}
		}
		return out, "", nil
	}
	return h.Discover.SearchKept(ctx, s.q, s.keep)
}

// federate runs the search's DHT round (discover.Lookup): the providers
// of its tags (the filter's tags, else the text's words that are tags)
// and the records of its identifiers the mirror lacks, within deadline
// (0: the node's default). ok is false when the node runs as many rounds
// as it allows. The round's window says which listings it brought.
func (h *Handler) federate(ctx context.Context, s search, deadline time.Duration) (run *DHTRun, round discover.Round, ok bool) {
	ask := discover.Ask{IDs: s.ids, Deadline: deadline}
	if len(s.ids) == 0 {
		ask.Tags = h.Discover.QueryTags(s.q)
	}
	round, err := h.Discover.Lookup(ctx, ask)
	switch {
	case errors.Is(err, discover.ErrBusy):
		return nil, round, false
	case err != nil:
		// Offline: nothing was asked.
		round.Errors++
	}
	return &DHTRun{Tags: round.Tags, Identifiers: round.Identifiers, Providers: round.Providers, Records: round.Records,
		Deadline: round.Deadline, Elapsed: round.Elapsed, TimedOut: round.TimedOut, Errors: round.Errors}, round, true
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
		// peer (p2p/catalogsync/feed.go).
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
