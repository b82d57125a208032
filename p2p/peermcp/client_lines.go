package peermcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The lines protocol (agent.MCPLinesProtocol): one send_message call a
// libp2p stream, in MCP's stdio framing. The caller writes the JSON-RPC
// request as one line and keeps its side open; the host writes the call's
// notifications and then its response, a line each, and closes the
// stream. Closing or resetting the stream before the response cancels the
// turn at the host. There is no HTTP on either side and no session: the
// request and every message of the answer are decoded once, and the host
// writes what the agent streams in as few writes as it can (handler_lines.go).
// It is what a node sends to hosts that speak it (identify says so);
// older hosts are called over HTTP (client_lean.go, or mcp-go's client).

// linesCall sends one call to the host in the lines protocol.
func (c *Client) linesCall(ctx context.Context, hostPeerID, token string, sink *progressSink, req mcp.CallToolRequest, args turnArgs) (*mcp.CallToolResult, error) {
	body, err := leanBody(c.ids.Add(1), req, args)
	if err != nil {
		return nil, err
	}
	s, err := c.net.OpenMCPLines(ctx, hostPeerID)
	if err != nil {
		return nil, transport.NewError(err)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	if _, err := s.Write(append(body, '\n')); err != nil {
		_ = s.Reset()
		return nil, c.linesFailed(ctx, err)
	}
	find := func(tok string) *progressSink {
		if tok == token {
			return sink
		}
		return nil
	}
	r := bufio.NewReader(s)
	for {
		line, err := readLine(r, maxAnswerMessage)
		if err != nil {
			_ = s.Reset()
			return nil, c.linesFailed(ctx, err)
		}
		res, err := answerMessage(line, find)
		if res == nil && err == nil {
			continue
		}
		var te *transport.Error
		if errors.As(err, &te) {
			_ = s.Reset()
		} else {
			_ = s.Close()
		}
		return res, err
	}
}

// linesFailed is the error of a call whose stream broke: ctx's if it ended
// (the stream was reset for it), else a transport error.
func (c *Client) linesFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return transport.NewError(fmt.Errorf("the host's answer broke off: %w", err))
}

// errLineTooLong: a message over its bound.
var errLineTooLong = errors.New("a message longer than this node reads")

// readLine reads one line of at most max bytes (its newline included),
// which is r's own buffer until the next read when it fits there.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	buf := append([]byte(nil), line...)
	for {
		line, err = r.ReadSlice('\n')
		if len(buf)+len(line) > max {
			return nil, errLineTooLong
		}
		buf = append(buf, line...)
		if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}
