// Package mcpstream streams an agent's reply to an MCP client, on mcp-go's
// Streamable HTTP server, as the reply is written: the chunks go out as
// notifications, and the HTTP plumbing around mcp-go (a counted flush, a
// body cap answered with 413) makes sure the last ones are not lost. The
// public /mcp server and p2p/peermcp's handler both use it; it is a leaf
// (no AgentSite imports) under mcpkit, which p2p may import and the
// runtime does not own.
package mcpstream

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Stream streams a turn's chunks to the MCP client: as progress
// notifications when the call carried a progress token (the chunk is the
// notification's message, progress counts chunks), else as logging
// notifications for clients that asked for them. A full notification queue
// holds the agent back instead of dropping text.
type Stream struct {
	ctx     context.Context
	srv     *server.MCPServer
	token   mcp.ProgressToken
	sent    int64
	flushed *atomic.Int64 // the request's SSE flushes (CountFlushes)
}

// New returns the stream of the tool call req, answered in ctx (a tool
// handler's context, on a request that went through CountFlushes).
func New(ctx context.Context, srv *server.MCPServer, req mcp.CallToolRequest) *Stream {
	f, _ := ctx.Value(flushCountKey{}).(*atomic.Int64)
	return &Stream{ctx: ctx, srv: srv, token: progressToken(req), flushed: f}
}

// progressToken is the call's progress token, nil if it asked for none.
func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta == nil {
		return nil
	}
	return req.Params.Meta.ProgressToken
}

// Emit sends one chunk; its signature is the runtime's emit.
func (t *Stream) Emit(chunk string) error {
	if chunk == "" {
		return nil
	}
	if t.token == nil {
		return sendBlocking(t.ctx, func() error {
			return t.srv.SendLogMessageToClient(t.ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "agent", chunk))
		})
	}
	progress := float64(t.sent + 1)
	var queued bool
	err := sendBlocking(t.ctx, func() error {
		err := t.srv.SendNotificationToClient(t.ctx, string(mcp.MethodNotificationProgress), map[string]any{
			"progressToken": t.token, "progress": progress, "message": chunk,
		})
		queued = err == nil
		return err
	})
	if queued {
		t.sent++
	}
	return err
}

// Notify sends a notification of method with params about this call (its
// progress token added), ordered with the chunks: how a host tells the
// caller of other events of the turn (peermcp's delegation steps). A call
// without a progress token gets none.
func (t *Stream) Notify(method string, params map[string]any) error {
	if t.token == nil {
		return nil
	}
	params["progressToken"] = t.token
	var queued bool
	err := sendBlocking(t.ctx, func() error {
		err := t.srv.SendNotificationToClient(t.ctx, method, params)
		queued = err == nil
		return err
	})
	if queued {
		t.sent++
	}
	return err
}

// Drain waits (briefly) until the progress notifications sent are on the
// wire; call it before returning the tool's result. Mcp-go drops a
// notification its forwarder has taken off the queue but not yet written
// when the response is ready, so without this the last chunks of a fast
// reply can go missing.
func (t *Stream) Drain() {
	if t.flushed == nil || t.sent == 0 {
		return
	}
	deadline := time.Now().Add(250 * time.Millisecond)
	for t.flushed.Load() < t.sent && time.Now().Before(deadline) && t.ctx.Err() == nil {
		time.Sleep(200 * time.Microsecond) // polling interval; normally zero rounds
	}
}

// sendBlocking retries a notification while the session's queue is full,
// for up to 10 s; other failures (a client that wants no notifications)
// are not the turn's problem.
func sendBlocking(ctx context.Context, send func() error) error {
	wait := time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := send()
		if !errors.Is(err, server.ErrNotificationChannelBlocked) || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}
