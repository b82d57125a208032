package handlers

import (
	"errors"
	"net/http"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

func (s *Server) pageRegister(w http.ResponseWriter, r *http.Request) {
	v := newAgentForm()
	v.Page = s.page(r, userFrom(r.Context()), "Register an agent", "register")
	s.render(w, r, http.StatusOK, web.AgentFormPage(v))
}

func (s *Server) submitRegister(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	u := userFrom(r.Context())
	in, v := parseAgentForm(r.PostForm)
	l, err := s.Registry.Create(r.Context(), httpkit.Principal{User: u}.Actor(), in)
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		v.Action = "/register"
		v.Errors = ve.Fields
		v.Page = s.page(r, u, "Register an agent", "register")
		s.render(w, r, http.StatusUnprocessableEntity, web.AgentFormPage(v))
		return
	}
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	s.flash(r, "Registered “"+l.Record.DisplayName+"”. It is being announced to the network.")
	redirect(w, r, agentHref(l.Record.ID))
}

// managedListing loads the {id} listing for an edit by u: 404 unknown or
// deleted, 403 not theirs.
func (s *Server) managedListing(r *http.Request, u *store.User) (store.Listing, error) {
	l, err := s.getListing(r)
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
func (s *Server) storedBackend(r *http.Request, id string) (agent.Backend, error) {
	b, err := s.Store.GetBackend(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return agent.Backend{}, nil
	}
	return b, err
}

func (s *Server) pageEditAgent(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	l, err := s.managedListing(r, u)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	b, err := s.storedBackend(r, l.Record.ID)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	v := agentFormFromListing(l, b)
	v.Page = s.page(r, u, "Edit "+l.Record.DisplayName, "account")
	s.render(w, r, http.StatusOK, web.AgentFormPage(v))
}

func (s *Server) submitEditAgent(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	u := userFrom(r.Context())
	l, err := s.managedListing(r, u)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	id := l.Record.ID
	in, v := parseAgentForm(r.PostForm)
	// The name is part of the id: the form shows it read-only, and the
	// stored one wins over anything posted.
	in.Name, v.Name = l.Record.Name, l.Record.Name
	saved, err := s.Registry.Update(r.Context(), httpkit.Principal{User: u}.Actor(), id, in)
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		b, berr := s.storedBackend(r, id)
		if berr != nil {
			s.renderError(w, r, berr)
			return
		}
		v.Edit, v.ID, v.Action, v.Errors = true, id, editAgentPath(id), ve.Fields
		v.Backend.HasStoredKey = b.APIKey != ""
		v.Page = s.page(r, u, "Edit "+l.Record.DisplayName, "account")
		s.render(w, r, http.StatusUnprocessableEntity, web.AgentFormPage(v))
		return
	}
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	s.flash(r, "Saved “"+saved.Record.DisplayName+"”. The new version is being announced.")
	redirect(w, r, agentHref(id))
}

func (s *Server) submitDeleteAgent(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	l, err := s.managedListing(r, u)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	if err := s.Registry.Delete(r.Context(), httpkit.Principal{User: u}.Actor(), l.Record.ID); err != nil {
		s.renderError(w, r, err)
		return
	}
	s.flash(r, "Deleted “"+l.Record.DisplayName+"”. The deletion is being announced.")
	redirect(w, r, "/account")
}

func agentHref(id string) string { return "/agents/" + id }
