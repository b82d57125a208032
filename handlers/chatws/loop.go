package chatws

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/web/markdown"
)

// WebSocket limits and timings.
const (
	maxFrame    = 64 << 10 // a message is ≤ 8 KiB of text; frames beyond this close the socket
	pongWait    = 60 * time.Second
	pingEvery   = 25 * time.Second
	writeWait   = 10 * time.Second
	queuedTurns = 4
)

// loop reads frames, runs turns one after another and streams the
// replies back. One writer goroutine owns the socket's write side.
func (h *Handler) loop(ctx context.Context, conn *websocket.Conn, owner chat.Owner, client string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer conn.Close()
	out := make(chan Out, 64)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		writer(ctx, conn, out)
	}()
	turns := make(chan In, queuedTurns)
	go func() {
		for in := range turns {
			h.runTurnSafely(ctx, owner, in, out)
		}
	}()
	defer close(turns)

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
			send(ctx, out, refusal)
		} else {
			select {
			case turns <- in:
			default:
				send(ctx, out, errorFrame(CodeBusy, "Wait for the current replies to finish.", in.ConversationID, false, false))
			}
		}
		select {
		case <-writerDone:
			return
		default:
		}
	}
}

// admit decodes a frame and checks the client's budget. A refusal is an
// error frame, and nothing of the message is stored.
func (h *Handler) admit(owner chat.Owner, client string, kind int, data []byte) (in In, refusal Out, ok bool) {
	if kind != websocket.TextMessage {
		return in, errorFrame(CodeBadFrame, "Send JSON text frames.", "", false, false), false
	}
	if err := json.Unmarshal(data, &in); err != nil || in.Type != TypeMessage {
		return in, errorFrame(CodeBadFrame, `Frames must be JSON like {"type":"message","agent_id":"…","text":"…"}.`, "", false, false), false
	}
	now := h.Now().UTC()
	if !h.Rates.Allow(string(owner), now) || !h.Rates.Allow("ip:"+client, now) {
		return in, errorFrame(httpkit.ErrRateLimited.Code, "You are sending messages too fast; wait a moment.", in.ConversationID, false, false), false
	}
	return in, Out{}, true
}

// runTurnSafely keeps a panic in one turn (a backend bug) from taking the
// whole process down: it becomes an error frame and a log line.
func (h *Handler) runTurnSafely(ctx context.Context, owner chat.Owner, in In, out chan<- Out) {
	defer func() {
		if v := recover(); v != nil {
			h.Logger.Error("panic in chat turn", "agent", in.AgentID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			_ = send(ctx, out, Out{Type: TypeError, Code: httpkit.ErrInternal.Code, Message: httpkit.ErrInternal.Message, ConversationID: in.ConversationID})
		}
	}()
	h.runTurn(ctx, owner, in, out)
}

func (h *Handler) runTurn(ctx context.Context, owner chat.Owner, in In, out chan<- Out) {
	var streamed atomic.Bool // a chunk came: the agent got the message
	emit := func(chunk string) error {
		if chunk == "" {
			return nil
		}
		streamed.Store(true)
		return send(ctx, out, Out{Type: TypeChunk, Text: chunk, ConversationID: in.ConversationID})
	}
	onStep := func(st agent.Step) {
		_ = send(ctx, out, Out{Type: TypeStep, ConversationID: in.ConversationID, Step: &st})
	}
	res, err := h.Chat.Turn(ctx, owner, chat.Request{AgentID: in.AgentID, ConversationID: in.ConversationID, Text: in.Text, OnStep: onStep}, emit)
	if err != nil {
		e := httpkit.Classify(err)
		if e.Status >= 500 {
			h.Logger.ErrorContext(ctx, "chat turn failed", "path", "/api/v1/chat", "agent", in.AgentID, "status", e.Status, "err", err)
		}
		_ = send(ctx, out, turnErrorFrame(e, res, in.ConversationID, streamed.Load()))
		return
	}
	// done carries the whole stored reply, so a client can correct what it
	// assembled from chunks (one can be lost when a remote host relays),
	// and its Markdown rendering, which replaces the plain streamed text.
	_ = send(ctx, out, Out{Type: TypeDone, ConversationID: res.Conversation.ID, MessageID: res.Reply.ID, Text: res.Reply.Text, HTML: string(markdown.Render(res.Reply.Text))})
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
