package portal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/web"
)

// HealthReader is what this node has seen of its own agents' health
// (registry.Health): the owner's pages show it.
type HealthReader interface {
	Summary(agentID string) agent.Health
	// LastError is the last probe's failure in words, for the owner only.
	LastError(agentID string) string
}

// BackendTester probes backends (registry.Prober): one not saved yet, for
// the forms' Test backend button, and a saved agent's, recorded in its
// health, right after saving.
type BackendTester interface {
	ProbeNow(ctx context.Context, b agent.Backend) runtime.ProbeResult
	ProbeAgent(ctx context.Context, id string) (runtime.ProbeResult, error)
}

// ProbeAfterSave bounds the probe of a just-saved agent, which the
// redirect waits for: a backend slower than this is left to the prober's
// next round.
const ProbeAfterSave = 3 * time.Second

// ownerHealth is local agent id's health for its owner; nil without a
// tracker.
func (p *Pages) ownerHealth(id string) *web.OwnerHealth {
	if p.Health == nil {
		return nil
	}
	s := p.Health.Summary(id)
	h := web.OwnerHealth{State: s.State, LatencyMS: s.LatencyMS, CheckedAt: s.CheckedAt, LastError: p.Health.LastError(id)}
	if !s.CheckedAt.IsZero() {
		h.CheckedAgo = web.Ago(s.CheckedAt, p.now())
	}
	return &h
}

// accountHealth is the health of the local agents among cards, by id; nil
// without a tracker. Other nodes' agents are not probed here.
func (p *Pages) accountHealth(cards []web.AgentCard) map[string]web.OwnerHealth {
	if p.Health == nil {
		return nil
	}
	out := make(map[string]web.OwnerHealth, len(cards))
	for _, c := range cards {
		if c.Local {
			out[c.ID] = *p.ownerHealth(c.ID)
		}
	}
	return out
}

// renderAgentForm renders the register or edit form with what only this
// node knows: whether it can test backends and the edited agent's health.
func (p *Pages) renderAgentForm(w http.ResponseWriter, r *http.Request, status int, v web.AgentFormView) {
	v.CanTest = p.Tester != nil
	if v.Edit {
		v.Health = p.ownerHealth(v.ID)
	}
	p.render(w, r, status, web.AgentFormPage(v))
}

// testBackend answers the forms' Test backend button. b, the form's
// backend (with the stored key on an edit whose key field is blank), is
// checked as saving would check it, host rule included, and only then
// probed, once. htmx gets the result alone, swapped in under the backend
// settings; without JavaScript the form (v) comes back with it, every
// typed value kept but the key, as after any error.
func (p *Pages) testBackend(w http.ResponseWriter, r *http.Request, v web.AgentFormView, b agent.Backend) {
	status := http.StatusOK
	var t web.BackendTest
	b, err := registry.ValidateBackend(b, p.Registry.BackendPolicy())
	var ve *agent.ValidationError
	switch {
	case errors.As(err, &ve):
		t.Invalid, v.Errors = ve.Fields, ve.Fields
		status = http.StatusUnprocessableEntity
	case err != nil:
		p.RenderError(w, r, err)
		return
	case p.Tester == nil:
		p.RenderError(w, r, errNoTester)
		return
	case b.Kind == agent.BackendBuiltin:
		t = web.BackendTest{Ran: true, OK: true, Builtin: true} // runs here: nothing to probe
	default:
		res := p.Tester.ProbeNow(r.Context(), b)
		if errors.Is(res.Err, context.Canceled) && r.Context().Err() != nil {
			return // the visitor left
		}
		t = web.BackendTest{Ran: true, OK: res.OK, Latency: res.Latency, Message: res.Message()}
	}
	if isHTMX(r) {
		// Swapped whatever it says: an error status would make htmx
		// report a failed request.
		p.render(w, r, http.StatusOK, web.BackendTestResult(t))
		return
	}
	v.Test = &t
	p.renderAgentForm(w, r, status, v)
}

// errNoTester answers a Test backend request on a node that cannot probe
// (its forms show no button).
var errNoTester = httpkit.Errorf(http.StatusServiceUnavailable, "backend_test_unavailable", "This node cannot test backends.")

// probeSaved probes a just-saved agent once, within ProbeAfterSave, so
// that its health is known at once, and says what it found in a sentence
// for the flash ("" when there is nothing to say).
func (p *Pages) probeSaved(r *http.Request, id, kind string) string {
	if p.Tester == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(r.Context(), ProbeAfterSave)
	defer cancel()
	res, err := p.Tester.ProbeAgent(ctx, id)
	switch {
	case err != nil:
		p.Logger.WarnContext(r.Context(), "probing a saved agent failed", "agent", id, "err", err)
		return ""
	case kind == agent.BackendBuiltin:
		return ""
	case ctx.Err() != nil:
		return fmt.Sprintf(" Its backend did not answer within %s; it will be checked again shortly.", ProbeAfterSave)
	case res.OK:
		return " Its backend answered in " + web.Millis(res.Latency) + "."
	}
	return " Its backend did not answer: " + res.Message() + "."
}

// PageStatusHelp explains every status word; the badges link to its
// anchors.
func (p *Pages) PageStatusHelp(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusOK, web.StatusHelpPage(web.StatusHelpView{
		Page:          p.page(r, p.viewer(r), "Status words", ""),
		SlowAfter:     registry.DefaultSlowAfter,
		FailingProbes: registry.DefaultFailingProbes,
	}))
}
