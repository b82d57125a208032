package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// afterLogin is where a form goes once the visitor is in: the safe ?next=
// path, or def.
func afterLogin(next, def string) string {
	if n := safeNext(next); n != "" {
		return n
	}
	return def
}

func (s *Server) authView(r *http.Request, title, nav, handle, next string) web.AuthView {
	return web.AuthView{
		Page:   s.page(r, nil, title, nav),
		Handle: handle,
		Next:   safeNext(next),
		Errors: map[string]string{},
	}
}

func (s *Server) pageSignup(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if s.viewer(r) != nil {
		redirect(w, r, afterLogin(next, "/account"))
		return
	}
	s.render(w, r, http.StatusOK, web.SignupPage(s.authView(r, "Sign up", "signup", "", next)))
}

func (s *Server) submitSignup(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	handle, password, next := r.PostForm.Get("handle"), r.PostForm.Get("password"), r.PostForm.Get("next")
	var u store.User
	var err error
	if password != r.PostForm.Get("password_confirm") {
		// Report the mismatch with whatever else is wrong, without
		// creating the account.
		ve := &agent.ValidationError{Fields: map[string]string{}}
		var other *agent.ValidationError
		if errors.As(httpkit.ValidateSignup(strings.ToLower(strings.TrimSpace(handle)), password), &other) {
			ve.Fields = other.Fields
		}
		ve.Fields["password_confirm"] = "does not match the password"
		err = ve
	} else {
		u, err = s.Accounts.CreateUser(r.Context(), handle, password)
	}
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		v := s.authView(r, "Sign up", "signup", handle, next)
		v.Errors = ve.Fields
		s.render(w, r, http.StatusUnprocessableEntity, web.SignupPage(v))
		return
	}
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	if err := s.sessions.LogIn(r.Context(), u.ID); err != nil {
		s.renderError(w, r, err)
		return
	}
	s.flash(r, "Welcome to AgentHub, @"+u.Handle+".")
	redirect(w, r, afterLogin(next, "/account"))
}

func (s *Server) pageLogin(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if s.viewer(r) != nil {
		redirect(w, r, afterLogin(next, "/"))
		return
	}
	s.render(w, r, http.StatusOK, web.LoginPage(s.authView(r, "Log in", "login", "", next)))
}

func (s *Server) submitLogin(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	handle, password, next := r.PostForm.Get("handle"), r.PostForm.Get("password"), r.PostForm.Get("next")
	v := s.authView(r, "Log in", "login", handle, next)
	if handle == "" {
		v.Errors["handle"] = "enter your handle"
	}
	if password == "" {
		v.Errors["password"] = "enter your password"
	}
	if len(v.Errors) > 0 {
		s.render(w, r, http.StatusUnprocessableEntity, web.LoginPage(v))
		return
	}
	u, err := s.Accounts.Authenticate(r.Context(), handle, password)
	var e *httpkit.Error
	if errors.As(err, &e) && e.Status == http.StatusUnauthorized {
		v.FormError = e.Message
		s.render(w, r, http.StatusUnauthorized, web.LoginPage(v))
		return
	}
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	if err := s.sessions.LogIn(r.Context(), u.ID); err != nil {
		s.renderError(w, r, err)
		return
	}
	s.flash(r, "Logged in as @"+u.Handle+".")
	redirect(w, r, afterLogin(next, "/"))
}

func (s *Server) submitLogout(w http.ResponseWriter, r *http.Request) {
	if err := s.sessions.LogOut(r.Context()); err != nil {
		s.renderError(w, r, err)
		return
	}
	s.flash(r, "You are logged out.")
	redirect(w, r, "/")
}
