// Package chatws serves the chat WebSocket, GET /api/v1/chat: the
// handshake (Origin, session, per-client socket cap), the frame protocol
// (In, Out) and the loop that runs one turn after another through
// agent/chat and streams the replies back. The portal's chat page opens
// it; without JavaScript the page posts a form instead (package portal).
package chatws

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/connlimit"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// Handler holds the dependencies of the chat WebSocket.
type Handler struct {
	Chat *chat.Chat
	// Live runs the turns, apart from the sockets that start or attach
	// to them.
	Live     *chat.Live
	Sessions *httpkit.Sessions
	// Sockets counts the sockets each client (httpkit.ClientKey) holds
	// open, and refuses one over its cap.
	Sockets *connlimit.Counter
	// Rates is the per-client budget of chat turns, shared with the other
	// ways to chat so a client cannot spend it once per surface: keyed by
	// the session's owner, and by the address when Anon is nil.
	Rates *httpkit.Rates
	// Anon is the address ceiling (per minute and in flight) of the
	// anonymous visitors behind one address together; nil: each address
	// shares one visitor's budget, as before sessions counted.
	Anon *httpkit.AnonBudget
	// AllowOrigin is the node's one Origin rule, applied to the handshake
	// whatever its method: a browser page of another site must not open
	// a socket with the visitor's session cookie.
	AllowOrigin func(r *http.Request) bool
	// Lifetime ends every socket, with a close frame, when it ends:
	// http.Server's Shutdown does not touch hijacked connections.
	Lifetime context.Context
	// Fail answers an error before the upgrade: the node's one error
	// renderer (JSON on this route).
	Fail   func(w http.ResponseWriter, r *http.Request, err error)
	Logger *slog.Logger
	Now    func() time.Time
	// RenderEvery is how often at most a streaming reply is rendered
	// again for the page (0: DefaultRenderEvery).
	RenderEvery time.Duration
}

// DefaultRenderEvery is Handler.RenderEvery when unset: ten renderings a
// second keep the formatting a line behind the text at worst.
const DefaultRenderEvery = 100 * time.Millisecond

func (h *Handler) renderEvery() time.Duration {
	if h.RenderEvery > 0 {
		return h.RenderEvery
	}
	return DefaultRenderEvery
}

// ServeHTTP is GET /api/v1/chat. It is outside the session middleware (a
// hijacked connection cannot commit a session), so it loads the session
// read-only from the cookie.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.AllowOrigin(r) {
		httpkit.WriteJSONError(w, httpkit.Errorf(http.StatusForbidden, CodeBadOrigin, "WebSocket connections are accepted only from this portal's own pages."))
		return
	}
	token := ""
	if c, err := r.Cookie(h.Sessions.Cookie.Name); err == nil {
		token = c.Value
	}
	ctx, err := h.Sessions.Load(r.Context(), token)
	if err != nil {
		h.Fail(w, r, fmt.Errorf("load session: %w", err))
		return
	}
	owner, ok := h.Sessions.ChatOwner(ctx)
	if !ok {
		httpkit.WriteJSONError(w, httpkit.Errorf(http.StatusUnauthorized, CodeNoSession, "Open the chat page first (it sets up your session), then connect."))
		return
	}
	client := httpkit.ClientKey(r)
	release, ok := h.Sockets.Acquire(client)
	if !ok {
		httpkit.WriteJSONError(w, &httpkit.Error{Status: http.StatusTooManyRequests, Code: CodeTooManySockets, RetryAfter: 10,
			Message: fmt.Sprintf("At most %d chat connections per client; close another tab and try again.", h.Sockets.Max())})
		return
	}
	defer release()
	up := websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		CheckOrigin:      h.AllowOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			httpkit.WriteJSONError(w, httpkit.Errorf(status, CodeBadHandshake, "Not a valid WebSocket handshake."))
		},
	}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	// The socket lives past the request: it ends with the client, or when
	// the server shuts down (Lifetime), not with r's context.
	sockCtx, end := h.socketContext(ctx)
	defer end()
	h.loop(sockCtx, conn, owner, client)
}

// socketContext is a context for a socket: it carries ctx's values (the
// session) but ends with Lifetime, not with the request. The caller must
// call end when the socket closes: it releases the registration on
// Lifetime (without it every socket ever opened stayed referenced until
// shutdown).
func (h *Handler) socketContext(ctx context.Context) (c context.Context, end func()) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(h.Lifetime, cancel)
	return c, func() {
		stop()
		cancel()
	}
}
