package httpkit

import (
	"context"
	"net/http"
)

type principalKey struct{}

// WithPrincipal is r carrying p, the principal its bearer token was found
// to be: Bearer returns it without looking the token up again (a
// middleware that needs the account, such as a write budget, and the
// handler after it).
func WithPrincipal(r *http.Request, p Principal) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
}

func principalOf(r *http.Request) (Principal, bool) {
	p, ok := r.Context().Value(principalKey{}).(Principal)
	return p, ok
}
