package portal

import (
	"errors"
	"net/http"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// PageRegister is the empty registration form.
func (p *Pages) PageRegister(w http.ResponseWriter, r *http.Request) {
	v := newAgentForm()
	v.Page = p.page(r, userFrom(r.Context()), "Register an agent", "register")
	p.renderAgentForm(w, r, http.StatusOK, v)
}

// SubmitRegister registers an agent for the logged-in user through the
// registry, and probes it once; invalid fields re-render the form with the
// input kept. The form's Test backend button (test_backend) probes the
// backend instead, without saving.
func (p *Pages) SubmitRegister(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	u := userFrom(r.Context())
	in, v := parseAgentForm(r.PostForm)
	v.Action = "/register"
	if p.pickTools(r, &v) {
		v.Page = p.page(r, u, "Register an agent", "register")
		p.renderAgentForm(w, r, http.StatusOK, v)
		return
	}
	if r.PostForm.Get("action") == actionAddSkill {
		v = addSkillRow(r.PostForm, v)
		v.Page = p.page(r, u, "Register an agent", "register")
		p.renderAgentForm(w, r, http.StatusOK, v)
		return
	}
	if r.PostForm.Has("test_backend") {
		v.Page = p.page(r, u, "Register an agent", "register")
		p.testBackend(w, r, v, in.Backend)
		return
	}
	l, err := p.Registry.Create(r.Context(), httpkit.Principal{User: u}.Actor(), in)
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		v.Errors = asTyped(ve.Fields, v.Tags)
		v.Page = p.page(r, u, "Register an agent", "register")
		p.renderAgentForm(w, r, http.StatusUnprocessableEntity, v)
		return
	}
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	probed := p.probeSaved(r, l.Record.ID, in.Backend.Kind)
	p.flash(r, "Registered “"+l.Record.DisplayName+"”. It is being announced to the network."+probed)
	redirect(w, r, agentHref(l.Record.ID))
}

// managedListing loads the {id} listing for an edit by u: 404 unknown or
// deleted, 403 not theirs.
func (p *Pages) managedListing(r *http.Request, u *store.User) (store.Listing, error) {
	l, err := p.getListing(r)
	if errors.Is(err, registry.ErrAgentGone) {
		return l, registry.ErrNoAgent
	}
	if err != nil {
		return l, err
	}
	if !(httpkit.Principal{User: u}).Actor().CanManage(l) {
		return l, registry.ErrNotYours
	}
	return l, nil
}

// storedBackend is the backend of a local agent, or the zero Backend if
// none is stored (an agent registered before backends were kept).
func (p *Pages) storedBackend(r *http.Request, id string) (agent.Backend, error) {
	b, err := p.Catalog.GetBackend(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return agent.Backend{}, nil
	}
	return b, err
}

// PageEditAgent is the registration form, prefilled, for the owner.
func (p *Pages) PageEditAgent(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	l, err := p.managedListing(r, u)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	b, err := p.storedBackend(r, l.Record.ID)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v := agentFormFromListing(l, b)
	v.Page = p.page(r, u, "Edit "+l.Record.DisplayName, "account")
	p.renderAgentForm(w, r, http.StatusOK, v)
}

// SubmitEditAgent saves a new version of the owner's agent, and probes it
// once; the name (part of the id) cannot change. The form's Test backend
// button (test_backend) probes the backend instead, without saving; a
// blank key field tests with the stored key, as saving keeps it.
func (p *Pages) SubmitEditAgent(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	u := userFrom(r.Context())
	l, err := p.managedListing(r, u)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	id := l.Record.ID
	in, v := parseAgentForm(r.PostForm)
	// The name is part of the id: the form shows it read-only, and the
	// stored one wins over anything posted.
	in.Name, v.Name = l.Record.Name, l.Record.Name
	v.Edit, v.ID, v.Action = true, id, editAgentPath(id)
	// again readies the form to be shown again (a test, an error): the
	// stored backend says whether a key is kept.
	again := func() (agent.Backend, bool) {
		stored, err := p.storedBackend(r, id)
		if err != nil {
			p.RenderError(w, r, err)
			return stored, false
		}
		v.Backend.HasStoredKey = stored.APIKey != ""
		v.Page = p.page(r, u, "Edit "+l.Record.DisplayName, "account")
		return stored, true
	}
	if p.pickTools(r, &v) {
		if _, ok := again(); ok {
			p.renderAgentForm(w, r, http.StatusOK, v)
		}
		return
	}
	if r.PostForm.Get("action") == actionAddSkill {
		if _, ok := again(); ok {
			p.renderAgentForm(w, r, http.StatusOK, addSkillRow(r.PostForm, v))
		}
		return
	}
	if r.PostForm.Has("test_backend") {
		if stored, ok := again(); ok {
			p.testBackend(w, r, v, registry.KeepKey(in.Backend, stored))
		}
		return
	}
	saved, err := p.Registry.Update(r.Context(), httpkit.Principal{User: u}.Actor(), id, in)
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		if _, ok := again(); ok {
			v.Errors = asTyped(ve.Fields, v.Tags)
			p.renderAgentForm(w, r, http.StatusUnprocessableEntity, v)
		}
		return
	}
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	probed := p.probeSaved(r, id, in.Backend.Kind)
	p.flash(r, "Saved “"+saved.Record.DisplayName+"”. The new version is being announced."+probed)
	redirect(w, r, agentHref(id))
}

// SubmitDeleteAgent deletes the owner's agent (a tombstone goes out).
func (p *Pages) SubmitDeleteAgent(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	l, err := p.managedListing(r, u)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	if err := p.Registry.Delete(r.Context(), httpkit.Principal{User: u}.Actor(), l.Record.ID); err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.flash(r, "Deleted “"+l.Record.DisplayName+"”. The deletion is being announced.")
	redirect(w, r, "/account")
}

func agentHref(id string) string { return "/agents/" + id }
