package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// WebSocket limits and timings.
const (
	wsMaxFrame    = 64 << 10 // a message is ≤ 8 KiB of text; frames beyond this close the socket
	wsPongWait    = 60 * time.Second
	wsPingEvery   = 25 * time.Second
	wsWriteWait   = 10 * time.Second
	wsQueuedTurns = 4
)

// wsIn is a frame from the browser.
type wsIn struct {
	Type           string `json:"type"`
	AgentID        string `json:"agent_id"`
	ConversationID string `json:"conversation_id,omitempty"`
	Text           string `json:"text"`
}

// wsOut is a frame to the browser (DESIGN.md: chunk, done, error).
//
// An error frame says what became of the message it answers, so the page
// can tell the person whether to send it again (build it with wsError):
//   - stored: the message is saved in its conversation (conversation_id)
//     and shows after a reload. False for a refused frame, rate limiting, a
//     full queue and every check before the message is saved.
//   - sent: the message was handed to the agent's backend or hosting node,
//     so the agent may have seen it. False when it surely did not (nothing
//     stored, chat not available on this node, the host unreachable or
//     refusing the turn, a disallowed backend address) and no reply chunk
//     came.
//
// Both are absent only when a turn crashed (a panic) and neither is known.
type wsOut struct {
	Type           string `json:"type"`
	Text           string `json:"text,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	MessageID      int64  `json:"message_id,omitempty"`
	Code           string `json:"code,omitempty"`
	Message        string `json:"message,omitempty"`
	Stored         *bool  `json:"stored,omitempty"`
	Sent           *bool  `json:"sent,omitempty"`
}

// wsError is an error frame about a message: stored and sent as wsOut
// says.
func wsError(code, message, conversationID string, stored, sent bool) wsOut {
	return wsOut{Type: "error", Code: code, Message: message, ConversationID: conversationID, Stored: &stored, Sent: &sent}
}

// wsTurnError is the error frame for a failed turn: Turn returns the
// conversation exactly when it stored the message before failing, and
// whether the agent got it (a streamed chunk proves it did).
func wsTurnError(e *httpkit.Error, res chat.Result, conversationID string, streamed bool) wsOut {
	stored := res.Conversation.ID != ""
	if stored {
		conversationID = res.Conversation.ID
	}
	return wsError(e.Code, e.Message, conversationID, stored, stored && (streamed || res.Sent))
}

// sameOrigin accepts a WebSocket handshake only from pages of this portal:
// the Origin's host must be the request's Host. (Browsers always send
// Origin on WebSocket handshakes; a missing one is a non-browser client.)
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// apiChat is GET /api/v1/chat: the AgentChat WebSocket. It is outside the
// session middleware (a hijacked connection cannot commit a session), so it
// loads the session read-only from the cookie.
func (s *Server) apiChat(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		httpkit.WriteJSONError(w, httpkit.Errorf(http.StatusForbidden, "bad_origin", "WebSocket connections are accepted only from this portal's own pages."))
		return
	}
	token := ""
	if c, err := r.Cookie(s.sessions.Cookie.Name); err == nil {
		token = c.Value
	}
	ctx, err := s.sessions.Load(r.Context(), token)
	if err != nil {
		s.renderError(w, r, fmt.Errorf("load session: %w", err))
		return
	}
	owner, ok := s.sessions.ChatOwner(ctx)
	if !ok {
		httpkit.WriteJSONError(w, httpkit.Errorf(http.StatusUnauthorized, "no_session", "Open the chat page first (it sets up your session), then connect."))
		return
	}
	release, ok := s.sockets.Acquire(httpkit.ClientKey(r))
	if !ok {
		w.Header().Set("Retry-After", "10")
		httpkit.WriteJSONError(w, httpkit.Errorf(http.StatusTooManyRequests, "too_many_sockets",
			fmt.Sprintf("At most %d chat connections per client; close another tab and try again.", s.Config.MaxSocketsPerClient)))
		return
	}
	defer release()
	up := websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		CheckOrigin:      sameOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			httpkit.WriteJSONError(w, httpkit.Errorf(status, "bad_handshake", "Not a valid WebSocket handshake."))
		},
	}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	// The socket lives past the request: it ends with the client, or when
	// the server shuts down (CloseChats), not with r's context.
	chatCtx, end := s.chatContext(ctx)
	defer end()
	s.chatLoop(chatCtx, conn, owner, httpkit.ClientKey(r))
}

// chatLoop reads frames, runs turns one after another and streams the
// replies back. One writer goroutine owns the socket's write side.
func (s *Server) chatLoop(ctx context.Context, conn *websocket.Conn, owner chat.Owner, ip string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer conn.Close()
	out := make(chan wsOut, 64)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.chatWriter(ctx, conn, out)
	}()
	turns := make(chan wsIn, wsQueuedTurns)
	go func() {
		for in := range turns {
			s.runWSTurnSafely(ctx, owner, in, out)
		}
	}()
	defer close(turns)

	conn.SetReadLimit(wsMaxFrame)
	_ = conn.SetReadDeadline(time.Now().Add(wsPongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(wsPongWait)) })
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return // closed, timed out, or a frame over the limit
		}
		_ = conn.SetReadDeadline(time.Now().Add(wsPongWait))
		if kind != websocket.TextMessage {
			send(ctx, out, wsError("bad_frame", "Send JSON text frames.", "", false, false))
			continue
		}
		var in wsIn
		if err := json.Unmarshal(data, &in); err != nil || in.Type != "message" {
			send(ctx, out, wsError("bad_frame", `Frames must be JSON like {"type":"message","agent_id":"…","text":"…"}.`, "", false, false))
			continue
		}
		if !s.chatLimits.Allow(string(owner), s.now()) || !s.chatLimits.Allow("ip:"+ip, s.now()) {
			send(ctx, out, wsError("rate_limited", "You are sending messages too fast; wait a moment.", in.ConversationID, false, false))
			continue
		}
		select {
		case turns <- in:
		default:
			send(ctx, out, wsError("busy", "Wait for the current replies to finish.", in.ConversationID, false, false))
		}
		select {
		case <-writerDone:
			return
		default:
		}
	}
}

// runWSTurnSafely keeps a panic in one turn (a backend bug) from taking
// the whole process down: it becomes an error frame and a log line.
func (s *Server) runWSTurnSafely(ctx context.Context, owner chat.Owner, in wsIn, out chan<- wsOut) {
	defer func() {
		if v := recover(); v != nil {
			s.Logger.Error("panic in chat turn", "agent", in.AgentID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			_ = send(ctx, out, wsOut{Type: "error", Code: "internal", Message: "Something went wrong on our side; try again later.", ConversationID: in.ConversationID})
		}
	}()
	s.runWSTurn(ctx, owner, in, out)
}

func (s *Server) runWSTurn(ctx context.Context, owner chat.Owner, in wsIn, out chan<- wsOut) {
	var streamed atomic.Bool // a chunk came: the agent got the message
	emit := func(chunk string) error {
		if chunk == "" {
			return nil
		}
		streamed.Store(true)
		return send(ctx, out, wsOut{Type: "chunk", Text: chunk, ConversationID: in.ConversationID})
	}
	res, err := s.Chat.Turn(ctx, owner, chat.Request{AgentID: in.AgentID, ConversationID: in.ConversationID, Text: in.Text}, emit)
	if err != nil {
		e := httpkit.Classify(err)
		s.logIfServer(&http.Request{Method: "WS", URL: &url.URL{Path: "/api/v1/chat"}}, e, err)
		_ = send(ctx, out, wsTurnError(e, res, in.ConversationID, streamed.Load()))
		return
	}
	// done carries the whole stored reply, so a client can correct what it
	// assembled from chunks (one can be lost when a remote host relays).
	_ = send(ctx, out, wsOut{Type: "done", ConversationID: res.Conversation.ID, MessageID: res.Reply.ID, Text: res.Reply.Text})
}

func send(ctx context.Context, out chan<- wsOut, m wsOut) error {
	select {
	case out <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) chatWriter(ctx context.Context, conn *websocket.Conn, out <-chan wsOut) {
	ping := time.NewTicker(wsPingEvery)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
			return
		case m := <-out:
			_ = conn.SetWriteDeadline(time.Now().Add(wsWriteWait))
			if err := conn.WriteJSON(m); err != nil {
				_ = conn.Close() // unblocks the reader, which ends the loop
				return
			}
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsWriteWait)); err != nil {
				_ = conn.Close()
				return
			}
		}
	}
}

// chatContext is a context for a chat socket: it carries ctx's values (the
// session) but ends when the server closes chats, not with the request.
// The caller must call end when the socket closes: it releases the
// registration on the server's lifetime (without it every socket ever
// opened stayed referenced until shutdown).
func (s *Server) chatContext(ctx context.Context) (c context.Context, end func()) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(s.lifetime, cancel)
	return c, func() {
		stop()
		cancel()
	}
}

// CloseChats ends every chat socket with a close frame; http.Server's
// Shutdown does not touch hijacked connections, so Main calls this first.
func (s *Server) CloseChats() { s.endLifetime() }
