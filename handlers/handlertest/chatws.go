package handlertest

import (
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/chatws"
)

// ReadFrame reads the next frame of a chat socket, failing t after 10 s.
func ReadFrame(t testing.TB, c *websocket.Conn) chatws.Out {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f chatws.Out
	if err := c.ReadJSON(&f); err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return f
}

// Turn sends a message frame (in.Type, or message) and collects the
// streamed reply up to the final done or error frame (started frames are
// skipped).
func Turn(t testing.TB, c *websocket.Conn, in chatws.In) (chunks []string, last chatws.Out) {
	t.Helper()
	if in.Type == "" {
		in.Type = chatws.TypeMessage
	}
	if err := c.WriteJSON(in); err != nil {
		t.Fatal(err)
	}
	for {
		f := ReadFrame(t, c)
		switch f.Type {
		case chatws.TypeStarted:
		case chatws.TypeChunk:
			chunks = append(chunks, f.Text)
		default:
			return chunks, f
		}
	}
}

// FailingAnswerer is a chat.Answerer that streams Chunk (if any), then
// fails with Err: a backend that breaks down mid-turn.
type FailingAnswerer struct {
	Chunk string
	Err   error
}

// Answer implements chat.Answerer.
func (f FailingAnswerer) Answer(_ context.Context, _ agent.Turn, emit func(string) error) (string, error) {
	if f.Chunk != "" {
		if err := emit(f.Chunk); err != nil {
			return "", err
		}
	}
	return f.Chunk, f.Err
}

// SlowFirst is what a SlowAnswerer streams at once.
const SlowFirst = "Thinking… "

// SlowAnswerer is a chat.Answerer that streams SlowFirst at once, then
// waits: Release lets one waiting turn end, its reply SlowFirst and the
// message; a turn whose context ends first (stopped, timed out) reports
// it on Canceled, the backend seeing its caller go.
type SlowAnswerer struct {
	release  chan struct{}
	canceled chan error
}

// NewSlowAnswerer is a SlowAnswerer with nothing released.
func NewSlowAnswerer() *SlowAnswerer {
	return &SlowAnswerer{release: make(chan struct{}, 64), canceled: make(chan error, 64)}
}

// Release lets one waiting (or the next) turn finish.
func (s *SlowAnswerer) Release() { s.release <- struct{}{} }

// Canceled hears the context error of each turn canceled while waiting.
func (s *SlowAnswerer) Canceled() <-chan error { return s.canceled }

// Answer implements chat.Answerer.
func (s *SlowAnswerer) Answer(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	if err := emit(SlowFirst); err != nil {
		return "", err
	}
	select {
	case <-s.release:
		if err := emit(t.Text); err != nil {
			return SlowFirst, err
		}
		return SlowFirst + t.Text, nil
	case <-ctx.Done():
		select {
		case s.canceled <- ctx.Err():
		default:
		}
		return SlowFirst, ctx.Err()
	}
}
