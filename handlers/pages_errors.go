package handlers

import (
	"net/http"

	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/web"
)

// renderErrorPage shows e to a person: a small fragment for an htmx request
// (swapped into its target), a full page otherwise. Only e's safe message
// is shown. When the store is what failed, the page is built without it:
// the nav shows a user only if the request already loaded one.
func (s *Server) renderErrorPage(w http.ResponseWriter, r *http.Request, e *httpkit.Error) {
	if isHTMX(r) {
		s.render(w, r, e.Status, web.ErrorFragment(e.Status, e.Message))
		return
	}
	title := errorTitle(e.Status)
	u := userFrom(r.Context())
	if e.Code != httpkit.ErrStoreUnavailable.Code {
		u = s.viewer(r)
	}
	v := web.ErrorView{
		Page:    s.page(r, u, title, ""),
		Status:  e.Status,
		Title:   title,
		Message: e.Message,
	}
	s.render(w, r, e.Status, web.ErrorPage(v))
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
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return http.StatusText(status)
}
