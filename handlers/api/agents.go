package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// ListAgents is GET /api/v1/agents: one page of the catalogue search, and
// how many listings the search matches (total: exact from the search
// index; from the database, counted up to store.MaxCountedMatches, with
// total_is_estimate when it stopped there).
func (a *API) ListAgents(w http.ResponseWriter, r *http.Request) {
	q, err := httpkit.ParseSearchQuery(r.URL.Query())
	if err != nil {
		a.Fail(w, r, httpkit.BadQuery(err))
		return
	}
	q.PublicOnly = true
	onlyVerified, err := a.verifiedFilter(r)
	if err != nil {
		a.Fail(w, r, httpkit.BadQuery(err))
		return
	}
	if onlyVerified {
		if q.Publishers = a.verifiedPublishers(); len(q.Publishers) == 0 {
			none := 0
			httpkit.WriteJSON(w, http.StatusOK, apiwire.AgentList{Agents: []apiwire.Agent{}, Total: &none})
			return
		}
	}
	body, err := a.listBody(r.Context(), q)
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	httpkit.WriteJSONBody(w, body)
}

// listBody is the encoded answer to a search, kept by the read cache's
// memo (discover.Answer: a repeated search costs a map look-up and a
// write, not an encoding of the page).
func (a *API) listBody(ctx context.Context, q store.SearchQuery) ([]byte, error) {
	v, err := a.Discover.Answer(ctx, "api/v1/agents\x00"+a.verifiedGeneration(), q, func(ctx context.Context, r discover.Result) (any, error) {
		var total apiwire.Total
		var counted bool
		var err error
		if total.N, total.Exact, counted, err = r.Total(ctx); err != nil {
			return nil, err
		}
		// The page is encoded into a scratch buffer and kept as an exact
		// copy: a buffer sized beforehand must be sized for the largest
		// node fields (health, verified domains), ~15 % more than a page
		// takes, and growing one copied it (BENCHMARKS.md "Memory at 100k
		// listings", stop 40).
		bp, _ := a.bodies.Get().(*[]byte)
		if bp == nil {
			bp = new([]byte)
		}
		var body []byte
		if !counted {
			body, err = apiwire.AppendAgentListVerified((*bp)[:0], r.Page, a.verifiedDomains)
		} else {
			body, err = apiwire.AppendAgentListTotal((*bp)[:0], r.Page, a.verifiedDomains, total)
		}
		if err != nil {
			return nil, err
		}
		out := make([]byte, len(body))
		copy(out, body)
		if cap(body) <= maxScratchBody {
			*bp = body
			a.bodies.Put(bp)
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// maxScratchBody bounds the scratch buffers listBody keeps for the next
// page: a page of store.MaxLimit large listings is not kept.
const maxScratchBody = 256 << 10

// GetAgent is GET /api/v1/agents/{id}, asking the network when the cache
// lacks the listing.
func (a *API) GetAgent(w http.ResponseWriter, r *http.Request) {
	l, err := a.Registry.Find(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	out := apiwire.FromListing(l)
	out.VerifiedDomains = a.verifiedDomains(l.Record.Publisher)
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// CreateAgent is POST /api/v1/agents: register an agent on this node as
// the token's account.
func (a *API) CreateAgent(w http.ResponseWriter, r *http.Request) {
	p, err := a.Accounts.Bearer(r)
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	var in apiwire.AgentInput
	if err := httpkit.DecodeJSON(r, &in); err != nil {
		a.Fail(w, r, err)
		return
	}
	l, err := a.Registry.Create(r.Context(), p.Actor(), registry.Input(in))
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/agents/"+l.Record.ID)
	httpkit.WriteJSON(w, http.StatusCreated, a.saved(r.Context(), l, in.Backend.Kind))
}

// saved is a just-saved listing as a create or an update answers it: with
// what one probe of its backend found (a builtin runs here: nothing to
// probe). A backend that fails is said, never refused: it may come up
// later, and the owner decides.
func (a *API) saved(ctx context.Context, l store.Listing, kind string) apiwire.Agent {
	out := apiwire.FromListing(l)
	if a.TestBackend != nil && kind != "" && kind != agent.BackendBuiltin {
		out.BackendTest = a.TestBackend(ctx, l.Record.ID)
	}
	return out
}

// ownedAgentRequest authenticates a write to /api/v1/agents/{id} and checks
// the id's shape; ok is false when it has already answered.
func (a *API) ownedAgentRequest(w http.ResponseWriter, r *http.Request) (p httpkit.Principal, id string, ok bool) {
	p, err := a.Accounts.Bearer(r)
	if err != nil {
		a.Fail(w, r, err)
		return p, "", false
	}
	id = chi.URLParam(r, "id")
	if !agent.ValidID(id) {
		a.Fail(w, r, registry.ErrNoAgent)
		return p, "", false
	}
	return p, id, true
}

// UpdateAgent is PUT /api/v1/agents/{id}: its owner (or the operator)
// publishes a new version.
func (a *API) UpdateAgent(w http.ResponseWriter, r *http.Request) {
	p, id, ok := a.ownedAgentRequest(w, r)
	if !ok {
		return
	}
	var in apiwire.AgentInput
	if err := httpkit.DecodeJSON(r, &in); err != nil {
		a.Fail(w, r, err)
		return
	}
	l, err := a.Registry.Update(r.Context(), p.Actor(), id, registry.Input(in))
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, a.saved(r.Context(), l, in.Backend.Kind))
}

// DeleteAgent is DELETE /api/v1/agents/{id}: publishes a tombstone.
func (a *API) DeleteAgent(w http.ResponseWriter, r *http.Request) {
	p, id, ok := a.ownedAgentRequest(w, r)
	if !ok {
		return
	}
	if err := a.Registry.Delete(r.Context(), p.Actor(), id); err != nil {
		a.Fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// NetworkSearch is POST /api/v1/network/search?tag=: one round on the
// DHT for the providers of a tag, their listings pulled into the mirror
// (discover.Lookup, within the node's limits); then GET
// /api/v1/agents?tag= shows them.
func (a *API) NetworkSearch(w http.ResponseWriter, r *http.Request) {
	tag := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("tag")))
	if !agent.IsSlug(tag, 1, agent.MaxTagLen) {
		a.Fail(w, r, &httpkit.Error{Status: http.StatusBadRequest, Code: httpkit.CodeBadQuery, Message: "Give a tag to search the network for.", Fields: map[string]string{"tag": "must be a tag"}})
		return
	}
	round, err := a.Discover.Lookup(r.Context(), discover.Ask{Tags: []string{tag}})
	if err != nil || (round.Err != nil && round.Providers == 0) {
		a.Fail(w, r, httpkit.NetworkSearchFailed(err))
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, apiwire.NetworkSearch{Tag: tag, Providers: round.Providers, Records: round.Records})
}
