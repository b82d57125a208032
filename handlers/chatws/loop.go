package chatws

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/web/markdown"
)

// WebSocket limits and timings.
const (
	maxFrame  = 64 << 10 // a message is ≤ 8 KiB of text; frames beyond this close the socket
	pongWait  = 60 * time.Second
	pingEvery = 25 * time.Second
	writeWait = 10 * time.Second
	// maxListening bounds the turns one socket listens to at once (its
	// own and those it attached to).
	maxListening = 8
)

// socket is one open chat socket: the turns it listens to. Turns run in
// chat.Live, apart from the socket: closing it stops listening, not the
// turn, which ends stored and can be attached to again.
type socket struct {
	h      *Handler
	ctx    context.Context
	owner  chat.Owner
	client string      // its address (httpkit.ClientKey)
	quota  agent.Quota // the client's chat budget, for the delegated turns of its messages
	out    chan Out

	mu     sync.Mutex
	subs   map[uint64]func() // unsubscribe, by listening id; nil while Start runs
	nextID uint64
	last   *chat.LiveTurn // the latest turn this socket started (stop without a conversation)
}

// loop reads frames and starts, stops or attaches to turns; one writer
// goroutine owns the socket's write side.
func (h *Handler) loop(ctx context.Context, conn *websocket.Conn, owner chat.Owner, client string) {
	keys := []string{string(owner)}
	if h.Anon == nil {
		keys = append(keys, "ip:"+client)
	}
	s := &socket{h: h, owner: owner, client: client, quota: h.Rates.Quota(h.Now, keys...), out: make(chan Out, 64), subs: map[uint64]func(){}}
	// Runs last: ctx is canceled by then, so a turn blocked on sending to
	// this socket has let go of its lock.
	defer s.unsubscribeAll()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer conn.Close()
	s.ctx = ctx
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		writer(ctx, conn, s.out)
	}()

	conn.SetReadLimit(maxFrame)
	_ = conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return // closed, timed out, or a frame over the limit
		}
		_ = conn.SetReadDeadline(time.Now().Add(pongWait))
		if in, refusal, ok := h.admit(owner, client, kind, data); !ok {
			_ = send(ctx, s.out, refusal)
		} else {
			s.handle(in)
		}
		select {
		case <-writerDone:
			return
		default:
		}
	}
}

// admit decodes a frame and, for one that starts a turn, checks the
// client's budget. A refusal is an error frame, and nothing of the message
// is stored.
func (h *Handler) admit(owner chat.Owner, client string, kind int, data []byte) (in In, refusal Out, ok bool) {
	if kind != websocket.TextMessage {
		return in, errorFrame(CodeBadFrame, "Send JSON text frames.", "", false, false), false
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return in, errorFrame(CodeBadFrame, `Frames must be JSON like {"type":"message","agent_id":"…","text":"…"}.`, "", false, false), false
	}
	switch in.Type {
	case TypeStop, TypeAttach:
		return in, Out{}, true
	case TypeMessage, TypeRetry, TypeEdit:
	case TypeApproval:
		if a := in.Approval; a == nil || a.ID == "" || len(a.ID) > agent.MaxApprovalIDLen || in.ConversationID == "" {
			return in, errorFrame(CodeBadFrame, `An approval frame is {"type":"approval","agent_id":"…","conversation_id":"…","approval":{"id":"…","approve":true}}.`, in.ConversationID, false, false), false
		}
		in.Text = "Deny"
		if in.Approval.Approve {
			in.Text = "Approve"
		}
	default:
		return in, errorFrame(CodeBadFrame, `Frames must be JSON like {"type":"message","agent_id":"…","text":"…"}; other types are stop, retry, edit, approval and attach.`, "", false, false), false
	}
	now := h.Now().UTC()
	if !h.Rates.Allow(string(owner), now) || !h.addressAllows(client, now) {
		return in, errorFrame(httpkit.ErrRateLimited.Code, "You are sending messages too fast; wait a moment.", in.ConversationID, false, false), false
	}
	return in, Out{}, true
}

func (s *socket) handle(in In) {
	if in.Type != TypeStop && s.listening() >= maxListening {
		_ = send(s.ctx, s.out, errorFrame(CodeBusy, "Wait for the current replies to finish.", in.ConversationID, false, false))
		return
	}
	switch in.Type {
	case TypeStop:
		if in.ConversationID != "" {
			s.h.Live.Stop(s.owner, in.ConversationID)
		} else if s.last != nil {
			s.last.Stop()
		}
	case TypeAttach:
		id := s.reserve()
		unsub, ok := s.h.Live.Attach(s.owner, in.ConversationID, s.subscriber(id, in.ConversationID))
		s.settle(id, unsub)
		if !ok {
			_ = send(s.ctx, s.out, Out{Type: TypeIdle, ConversationID: in.ConversationID})
		}
	default:
		req := chat.Request{AgentID: in.AgentID, ConversationID: in.ConversationID, Text: in.Text, Quota: s.quota, Approval: in.Approval}
		switch in.Type {
		case TypeRetry:
			req.ReplaceLast, req.Text = true, ""
		case TypeEdit:
			req.ReplaceLast = true
		}
		release := func() {}
		if s.h.Anon != nil && s.owner.Anonymous() {
			var err error
			if release, err = s.h.Anon.Hold(s.client); err != nil {
				e := httpkit.Classify(err)
				_ = send(s.ctx, s.out, errorFrame(e.Code, e.Message, in.ConversationID, false, false))
				return
			}
		}
		id := s.reserve()
		t, unsub, err := s.h.Live.Start(s.ctx, s.owner, req, s.subscriber(id, in.ConversationID))
		s.settle(id, unsub)
		if err != nil {
			release()
			e := httpkit.Classify(err)
			_ = send(s.ctx, s.out, errorFrame(e.Code, e.Message, in.ConversationID, false, false))
			return
		}
		// The turn outlives the socket (Live): the address's slot is
		// held until the turn ends.
		go func() {
			<-t.Done()
			release()
		}()
		s.last = t
	}
}

// addressAllows is the per-minute budget of client's address: its
// ceiling for every visitor behind it (Anon), or without one the budget
// of a single visitor.
func (h *Handler) addressAllows(client string, now time.Time) bool {
	if h.Anon != nil {
		return h.Anon.Allow(client, now)
	}
	return h.Rates.Allow("ip:"+client, now)
}

func (s *socket) listening() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// reserve is a listening id, filed before the turn can end.
func (s *socket) reserve() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	s.subs[id] = nil
	return id
}

// settle files unsub under id, unless the turn already ended (or never
// listened: unsub nil).
func (s *socket) settle(id uint64, unsub func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[id]; !ok {
		return
	}
	if unsub == nil {
		delete(s.subs, id)
		return
	}
	s.subs[id] = unsub
}

func (s *socket) unsubscribeAll() {
	s.mu.Lock()
	subs := s.subs
	s.subs = map[uint64]func(){}
	s.mu.Unlock()
	for _, u := range subs {
		if u != nil {
			u()
		}
	}
}

// subscriber turns a live turn's events into this socket's frames.
func (s *socket) subscriber(id uint64, convID string) func(chat.Event) {
	var streamed bool
	var live liveMarkdown
	return func(ev chat.Event) {
		switch {
		case ev.Resume != nil:
			streamed = *ev.Resume != ""
			live.text.WriteString(*ev.Resume)
			_ = send(s.ctx, s.out, Out{Type: TypeAttached, ConversationID: convID, Text: *ev.Resume})
		case ev.Started != nil:
			convID = ev.Started.ID
			_ = send(s.ctx, s.out, Out{Type: TypeStarted, ConversationID: convID, Text: ev.Started.Title})
		case ev.Step != nil:
			_ = send(s.ctx, s.out, Out{Type: TypeStep, ConversationID: convID, Step: ev.Step})
		case ev.Wait != nil:
			_ = send(s.ctx, s.out, Out{Type: TypeWaiting, ConversationID: convID, Ahead: ev.Wait})
		case ev.End != nil:
			s.mu.Lock()
			delete(s.subs, id)
			s.mu.Unlock()
			_ = send(s.ctx, s.out, s.h.endFrame(s.ctx, ev.End, convID, streamed))
		default:
			streamed = true
			out := Out{Type: TypeChunk, Text: ev.Chunk, ConversationID: convID}
			out.HTML, out.Tail = live.add(ev.Chunk, s.h.Now(), s.h.renderEvery())
			_ = send(s.ctx, s.out, out)
		}
	}
}

// liveMarkdown is a streaming reply as the socket has sent it, rendered
// again (markdown.RenderPartial) when a chunk finishes a line, at most
// once a renderEvery: each rendering reads the whole reply so far, so a
// long reply of short lines costs a bounded number of them a second.
type liveMarkdown struct {
	text     strings.Builder
	rendered time.Time
}

// add appends chunk and says the HTML and tail to send with it, or ""
// and "" when the page is to append the chunk to the tail it has.
func (l *liveMarkdown) add(chunk string, now time.Time, every time.Duration) (html, tail string) {
	l.text.WriteString(chunk)
	if !strings.Contains(chunk, "\n") || now.Sub(l.rendered) < every || l.text.Len() > markdown.MaxInput {
		return "", ""
	}
	l.rendered = now
	h, tail := markdown.RenderPartial(l.text.String())
	if h == "" {
		return "", ""
	}
	return string(h), tail
}

// endFrame is done, with the whole stored reply (so a client can correct
// what it assembled from chunks, one of which a relaying host may drop)
// and its Markdown rendering, which replaces the plain streamed text; or
// the error frame of a failed turn.
func (h *Handler) endFrame(ctx context.Context, end *chat.LiveEnd, convID string, streamed bool) Out {
	if end.Err != nil {
		e := httpkit.Classify(end.Err)
		if e.Status >= 500 {
			h.Logger.ErrorContext(ctx, "chat turn failed", "path", "/api/v1/chat", "status", e.Status, "err", end.Err)
		}
		return turnErrorFrame(e, end.Result, convID, streamed || end.Streamed)
	}
	r := end.Result
	return Out{Type: TypeDone, ConversationID: r.Conversation.ID, MessageID: r.Reply.ID, Text: r.Reply.Text, HTML: string(markdown.Render(r.Reply.Text)),
		Approval: r.Approval}
}

func send(ctx context.Context, out chan<- Out, m Out) error {
	select {
	case out <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writer owns the socket's write side: frames, pings, and the close frame
// when ctx ends.
func writer(ctx context.Context, conn *websocket.Conn, out <-chan Out) {
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
			return
		case m := <-out:
			_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := conn.WriteJSON(m); err != nil {
				_ = conn.Close() // unblocks the reader, which ends the loop
				return
			}
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				_ = conn.Close()
				return
			}
		}
	}
}
