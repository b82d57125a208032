package portal

import (
	"context"
	"net/http"

	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/web"
)

// RenderError is the portal's half of the one error renderer: err becomes
// its status and safe message, on a page or an htmx fragment. The handlers
// root sends every non-API error here (404, 405, 413, 429, refusals by
// middleware, a session the store could not load), so all of them look
// like the site.
func (p *Pages) RenderError(w http.ResponseWriter, r *http.Request, err error) {
	e := httpkit.Classify(err)
	p.logIfServer(r, e, err)
	if e.Status == httpkit.StatusClientClosed {
		return
	}
	httpkit.SetRetryAfter(w, e)
	if e.Status == http.StatusRequestTimeout {
		// net/http has cancelled the request (its body read failed);
		// the client may still be there to read why.
		r = r.WithContext(context.WithoutCancel(r.Context()))
	}
	p.renderErrorPage(w, r, e)
}

// renderErrorPage shows e to a person: a small fragment for an htmx request
// (swapped into its target), a full page otherwise. Only e's safe message
// is shown. When the store is what failed, the page is built without it:
// the nav shows a user only if the request already loaded one.
func (p *Pages) renderErrorPage(w http.ResponseWriter, r *http.Request, e *httpkit.Error) {
	if isHTMX(r) {
		p.render(w, r, e.Status, web.ErrorFragment(e.Status, e.Message))
		return
	}
	title := errorTitle(e.Status)
	u := userFrom(r.Context())
	if e.Code != httpkit.ErrStoreUnavailable.Code {
		u = p.viewer(r)
	}
	v := web.ErrorView{
		Page:    p.page(r, u, title, ""),
		Status:  e.Status,
		Title:   title,
		Message: e.Message,
	}
	p.render(w, r, e.Status, web.ErrorPage(v))
}

func errorTitle(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "That request did not make sense"
	case http.StatusUnauthorized:
		return "Please log in"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusNotFound:
		return "Not found"
	case http.StatusGone:
		return "Deleted"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusRequestEntityTooLarge:
		return "Too large"
	case http.StatusUnprocessableEntity:
		return "Invalid input"
	case http.StatusTooManyRequests:
		return "Slow down"
	case http.StatusServiceUnavailable:
		return "Temporarily unavailable"
	case http.StatusInsufficientStorage:
		return "This node's disk is full"
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return http.StatusText(status)
}
