package portal

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"

	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/static"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// render writes a component as an HTML response. It renders into a buffer
// first, so a template error becomes a clean 500 instead of half a page.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		e := httpkit.Classify(err)
		p.logIfServer(r, e, err)
		if e.Status == httpkit.StatusClientClosed {
			return
		}
		http.Error(w, e.Message, e.Status)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Pages are personal (the nav shows the user; the account page may show
	// a fresh API token), so nothing may keep a copy.
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// viewer is the logged-in user of a portal request, or nil (also on
// routes outside the session middleware, whose errors are pages too).
func (p *Pages) viewer(r *http.Request) *store.User {
	if u := userFrom(r.Context()); u != nil {
		return u
	}
	if !httpkit.HasSession(r.Context()) {
		return nil
	}
	return p.currentUser(r)
}

// page builds what the layout needs: the user, the one-shot flash message
// (popped here, so call it before writing the response) and asset URLs.
func (p *Pages) page(r *http.Request, u *store.User, title, nav string) web.Page {
	flash := p.Sessions.PopFlash(r.Context())
	pg := web.Page{
		Title: title,
		Nav:   nav,
		Flash: flash,
		Assets: web.Assets{
			CSS:   static.Path("app.css"),
			HTMX:  static.Path("htmx.min.js"),
			JS:    static.Path("app.js"),
			Theme: static.Path("theme.js"),
		},
	}
	if u != nil {
		pg.User = u.Handle
	}
	return pg
}

// flash leaves a message for the next page the visitor sees.
func (p *Pages) flash(r *http.Request, msg string) {
	p.Sessions.Flash(r.Context(), msg)
}

// redirect answers a successful form POST (Post/Redirect/Get).
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// isHTMX reports whether htmx made the request, for a fragment response.
// A history-restore request wants the whole page.
func isHTMX(r *http.Request) bool {
	return r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-History-Restore-Request") != "true"
}

// hxTarget is the id of the element an htmx request will swap, or "".
func hxTarget(r *http.Request) string {
	if !isHTMX(r) {
		return ""
	}
	return r.Header.Get("HX-Target")
}

// codeBadForm is the error code of a form body that cannot be parsed.
const codeBadForm = "bad_form"

// parseForm reads a form body. A body over the limit is a 413; anything
// else unreadable a 400. It reports whether the handler may go on.
func (p *Pages) parseForm(w http.ResponseWriter, r *http.Request) bool {
	err := r.ParseForm()
	if err == nil {
		return true
	}
	var mbe *http.MaxBytesError
	var known *httpkit.Error // a body that arrived too slowly
	if errors.As(err, &mbe) || errors.As(err, &known) {
		p.RenderError(w, r, err)
	} else {
		p.RenderError(w, r, httpkit.Errorf(http.StatusBadRequest, codeBadForm, "The form could not be read; reload the page and try again."))
	}
	return false
}

// safeNext returns next if it is a path on this site ("/account"), and ""
// for anything that could leave it: "//host", "/\host", schemes, control
// characters.
func safeNext(next string) string {
	if next == "" || len(next) > 2048 || next[0] != '/' || strings.HasPrefix(next, "//") {
		return ""
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return ""
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return ""
	}
	return next
}
