package portal

import (
	"errors"
	"math"
	"net/http"
	"strconv"
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

func (p *Pages) authView(r *http.Request, title, nav, handle, next string) web.AuthView {
	return web.AuthView{
		Page:   p.page(r, nil, title, nav),
		Handle: handle,
		Next:   safeNext(next),
		Errors: map[string]string{},
	}
}

// PageSignup is the sign-up form; a logged-in visitor goes on to ?next=.
func (p *Pages) PageSignup(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if p.viewer(r) != nil {
		redirect(w, r, afterLogin(next, "/account"))
		return
	}
	p.render(w, r, http.StatusOK, web.SignupPage(p.authView(r, "Sign up", "signup", "", next)))
}

// SubmitSignup creates the account and logs it in. A password mismatch
// is reported with the other field errors, before anything is created.
func (p *Pages) SubmitSignup(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
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
		ve.Fields["password_confirm"] = "does not match the password: type both again"
		err = ve
	} else {
		u, err = p.Accounts.CreateUser(r.Context(), handle, password)
	}
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		v := p.authView(r, "Sign up", "signup", handle, next)
		v.Errors = ve.Fields
		// The first field to fix: the handle, else the password (both
		// password fields come back empty, so a mismatch starts again at
		// the first of them).
		switch {
		case ve.Fields["handle"] != "":
			v.Focus = "handle"
		case ve.Fields["password"] != "" || ve.Fields["password_confirm"] != "":
			v.Focus = "password"
		}
		p.render(w, r, http.StatusUnprocessableEntity, web.SignupPage(v))
		return
	}
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.startSession(w, r, u.ID, "Welcome to AgentHub, @"+u.Handle+".", afterLogin(next, "/account"))
}

// PageLogin is the login form; a logged-in visitor goes on to ?next=.
func (p *Pages) PageLogin(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if p.viewer(r) != nil {
		redirect(w, r, afterLogin(next, "/"))
		return
	}
	v := p.authView(r, "Log in", "login", "", next)
	v.Reason = loginReason(v.Next)
	p.render(w, r, http.StatusOK, web.LoginPage(v))
}

// loginReason says why a page that needs an account sent the visitor to
// log in (RequireLogin passes the page as ?next=), or "" when next is not
// such a page.
func loginReason(next string) string {
	path, _, _ := strings.Cut(next, "?")
	under := func(p string) bool { return path == p || strings.HasPrefix(path, p+"/") }
	switch {
	case under("/register"):
		return "Log in to register an agent."
	case under("/account/agents"):
		return "Log in to manage your agents."
	case under("/account/tokens"):
		return "Log in to manage your API tokens."
	case under("/account"):
		return "Log in to see your account."
	}
	return ""
}

// SubmitLogin checks the password and starts a fresh session; a wrong
// handle and a wrong password get the same answer.
func (p *Pages) SubmitLogin(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	handle, password, next := r.PostForm.Get("handle"), r.PostForm.Get("password"), r.PostForm.Get("next")
	v := p.authView(r, "Log in", "login", handle, next)
	if handle == "" {
		v.Errors["handle"] = "enter your handle"
	}
	if password == "" {
		v.Errors["password"] = "enter your password"
	}
	if len(v.Errors) > 0 {
		p.render(w, r, http.StatusUnprocessableEntity, web.LoginPage(v))
		return
	}
	if msg, ok := p.passwordAttempt(w, handle); !ok {
		v.FormError = msg
		p.render(w, r, http.StatusTooManyRequests, web.LoginPage(v))
		return
	}
	u, err := p.Accounts.Authenticate(r.Context(), handle, password)
	var e *httpkit.Error
	if errors.As(err, &e) && e.Status == http.StatusUnauthorized {
		v.FormError = e.Message
		p.render(w, r, http.StatusUnauthorized, web.LoginPage(v))
		return
	}
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.startSession(w, r, u.ID, "Logged in as @"+u.Handle+".", afterLogin(next, "/"))
}

// passwordAttempt takes one password attempt at handle's account from its
// budget (Logins). Without one left it sets Retry-After and returns what
// to tell the visitor.
func (p *Pages) passwordAttempt(w http.ResponseWriter, handle string) (string, bool) {
	ok, wait := p.Logins.Allow(handle, p.now())
	if ok {
		return "", true
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	return "Too many password attempts at @" + strings.ToLower(strings.TrimSpace(handle)) +
		" from everywhere: try again " + httpkit.TryAgainIn(wait) + ".", false
}

// startSession logs userID in (a new session token, against fixation),
// greets them with flash and sends them on to next.
func (p *Pages) startSession(w http.ResponseWriter, r *http.Request, userID int64, flash, next string) {
	if err := p.Sessions.LogIn(r.Context(), userID); err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.flash(r, flash)
	redirect(w, r, next)
}

// SubmitLogout ends the session. POST only, so a link elsewhere cannot
// log anyone out.
func (p *Pages) SubmitLogout(w http.ResponseWriter, r *http.Request) {
	if err := p.Sessions.LogOut(r.Context()); err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.flash(r, "You are logged out.")
	redirect(w, r, "/")
}
