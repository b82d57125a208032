package api

import (
	"net/http"
	"slices"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// batchWorkers is how many items of one batch request are registered at
// once when the store runs no transactions (registry.BatchAll).
const batchWorkers = 8

// errOperatorOnly answers a batch from a personal token.
var errOperatorOnly = httpkit.Errorf(http.StatusForbidden, string(agent.CodeForbidden), "Bulk registration takes the operator token.")

// BatchAgents is POST /api/v1/agents:batch: the operator registers up to
// apiwire.MaxBatchItems agents, each as POST /api/v1/agents would; the
// answer is 200 with one result per item, refused ones with the error a
// single registration would have had.
func (a *API) BatchAgents(w http.ResponseWriter, r *http.Request) {
	p, err := a.Accounts.Bearer(r)
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	if !p.Operator {
		a.Fail(w, r, errOperatorOnly)
		return
	}
	var req apiwire.BatchRequest
	if err := httpkit.DecodeJSON(r, &req); err != nil {
		a.Fail(w, r, err)
		return
	}
	if len(req.Items) > apiwire.MaxBatchItems {
		a.Fail(w, r, &httpkit.Error{Status: http.StatusRequestEntityTooLarge, Code: httpkit.ErrTooLarge.Code,
			Message: "Send at most 1000 items per batch."})
		return
	}
	items := make([]registry.BatchItem, len(req.Items))
	for i, in := range req.Items {
		items[i] = registry.BatchItem{Index: i, Input: registry.Input(in)}
	}
	out := apiwire.BatchResponse{Results: make([]apiwire.BatchResult, 0, len(req.Items))}
	// One transaction per registry.BatchChunk items of the request (500),
	// as an offline import writes them.
	err = a.Registry.BatchAll(r.Context(), p.Actor(), items, batchWorkers, func(res registry.BatchResult) {
		br := apiwire.BatchResult{Index: res.Index, Name: res.Name, ID: res.ID, Outcome: res.Outcome}
		switch res.Outcome {
		case registry.OutcomeCreated:
			out.Created++
		case registry.OutcomeUpdated:
			out.Updated++
		default:
			out.Refused++
			e := httpkit.Classify(res.Err)
			if e == httpkit.ErrInternal && a.Logger != nil {
				a.Logger.ErrorContext(r.Context(), "a batch item failed on our side", "index", res.Index, "name", res.Name, "err", res.Err)
			}
			br.Error = &apiwire.Error{Code: e.Code, Message: e.Message, Fields: e.Fields}
		}
		out.Results = append(out.Results, br)
	})
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	slices.SortFunc(out.Results, func(x, y apiwire.BatchResult) int { return x.Index - y.Index })
	httpkit.WriteJSON(w, http.StatusOK, out)
}
