package peermcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/p2p"
)

// TestLinesCall: a host that serves both protocols is called in the lines
// protocol, on one stream; turns at once each stream their own chunks in
// order and get their exact reply, and the host's refusals map back as
// over HTTP.
func TestLinesCall(t *testing.T) {
	h := newTestHost(t)
	host, portal := mcpTestNode(t), mcpTestNode(t)
	if err := host.ServeMCP(NewHandler(h.cfg)); err != nil {
		t.Fatal(err)
	}
	var streams atomic.Int64
	lines := NewLinesHandler(h.cfg)
	host.ServeMCPLines(func(ctx context.Context, caller string, s network.Stream) {
		streams.Add(1)
		lines.ServeStream(ctx, caller, s)
	})
	mcpIntroduce(portal, host)
	client := testClient(t, portal)

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			text := fmt.Sprintf("turn %d says hello", i)
			var got []string
			reply, err := client.Send(t.Context(), host.PeerID(), agent.Turn{AgentID: h.echo, Text: text}, func(s string) error {
				got = append(got, s)
				return nil
			})
			// The host merges the chunks of a millisecond into one line,
			// but each chunk arrives as the agent made it.
			if want := strings.SplitAfter(text, " "); err != nil || reply != text || !slices.Equal(got, want) {
				t.Errorf("turn %d: Send = %q, %v; streamed %q, want %q", i, reply, err, got, want)
			}
		})
	}
	wg.Wait()
	if n := streams.Load(); n != 1 {
		t.Errorf("20 turns at once came on %d lines streams, want 1", n)
	}
	for _, tc := range []struct {
		turn agent.Turn
		code agent.Code
		want error
	}{
		{agent.Turn{AgentID: h.missing, Text: "x"}, agent.CodeUnknownAgent, agent.ErrUnknownAgent},
		{agent.Turn{AgentID: h.alices, Owner: "mallory", Text: "x"}, agent.CodeOwnerChanged, agent.ErrOwnerChanged},
		{agent.Turn{AgentID: h.rejects, Text: "x"}, agent.CodeAgentRejected, agent.ErrBackendRejected},
	} {
		_, err := client.Send(t.Context(), host.PeerID(), tc.turn, nil)
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != tc.code || !errors.Is(err, tc.want) {
			t.Errorf("Send to %s = %v, want code %s", tc.turn.AgentID, err, tc.code)
		}
	}
}

// linesRaw opens a raw lines stream from portal to host.
func linesRaw(t *testing.T, portal, host *p2p.Node) (network.Stream, *bufio.Reader) {
	t.Helper()
	if err := portal.ConnectHost(t.Context(), host.PeerID()); err != nil {
		t.Fatal(err)
	}
	if !portal.SpeaksMCPLines(host.PeerID()) {
		t.Fatal("identify did not say the host speaks the lines protocol")
	}
	s, err := portal.OpenMCPLines(t.Context(), host.PeerID())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Reset() })
	_ = s.SetReadDeadline(time.Now().Add(time.Minute)) // a test that waits in vain fails
	return s, bufio.NewReader(s)
}

// nextResponse reads lines up to the next response (skipping
// notifications) and decodes it.
func nextResponse(t *testing.T, r *bufio.Reader) (map[string]any, error) {
	t.Helper()
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("the answer %q is not JSON", line)
		}
		if _, ok := m["id"]; ok {
			return m, nil
		}
	}
}

func rpcCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func sendMessageLine(id int, agentID, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_message","arguments":{"agent_id":%q,"text":%q},"_meta":{"progressToken":"p%d"}}}`+"\n", id, agentID, text, id)
}

// TestLinesProtocolRefusals: one lines stream carries many calls; a
// method other than send_message gets "method not found" naming the
// protocol to use, and the stream goes on; a line that is not JSON-RPC
// resets the stream.
func TestLinesProtocolRefusals(t *testing.T) {
	h := newTestHost(t)
	host, portal := mcpTestNode(t), mcpTestNode(t)
	host.ServeMCPLines(NewLinesHandler(h.cfg).ServeStream)
	mcpIntroduce(portal, host)
	s, r := linesRaw(t, portal, host)
	if _, err := s.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n" + sendMessageLine(2, h.echo, "one") + sendMessageLine(3, h.echo, "two"))); err != nil {
		t.Fatal(err)
	}
	got := map[float64]map[string]any{}
	for range 3 {
		m, err := nextResponse(t, r)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := m["id"].(float64)
		got[id] = m
	}
	if e, _ := got[1]["error"].(map[string]any); rpcCode(got[1]) != rpcMethodNotFound || !strings.Contains(fmt.Sprint(e["message"]), agent.MCPProtocol) {
		t.Errorf("tools/list: %v; want error %d naming %s", got[1], rpcMethodNotFound, agent.MCPProtocol)
	}
	for _, id := range []float64{2, 3} {
		if res, _ := got[id]["result"].(map[string]any); res == nil || res["isError"] == true {
			t.Errorf("call %v on the shared stream: %v; want its result", id, got[id])
		}
	}
	if _, err := s.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if m, err := nextResponse(t, r); err == nil {
		t.Errorf("after a line that is not JSON-RPC: %v, want the stream reset", m)
	}
}

// parkedAnswerer answers nothing until its context ends, and reports
// that it did.
type parkedAnswerer struct{ ended chan error }

func (b parkedAnswerer) Answer(ctx context.Context, _ agent.Turn, _ func(string) error) (string, error) {
	<-ctx.Done()
	b.ended <- ctx.Err()
	return "", ctx.Err()
}

// TestLinesPerPeerBound: a peer's calls in flight are bounded over all
// its streams; one over the bound is answered at once with agent_busy,
// and once a call ends the next is taken.
func TestLinesPerPeerBound(t *testing.T) {
	h := newTestHost(t)
	b := parkedAnswerer{ended: make(chan error, 8)}
	h.cfg.Answerer = b
	lines := NewLinesHandler(h.cfg)
	lines.perPeer = 3
	host, portal := mcpTestNode(t), mcpTestNode(t)
	host.ServeMCPLines(lines.ServeStream)
	mcpIntroduce(portal, host)
	s1, r1 := linesRaw(t, portal, host)
	s2, r2 := linesRaw(t, portal, host)
	if _, err := s1.Write([]byte(sendMessageLine(1, h.echo, "a") + sendMessageLine(2, h.echo, "b"))); err != nil {
		t.Fatal(err)
	}
	caller := "peer:" + portal.PeerID()
	waitfor.Until(t, 10*time.Second, "calls 1 and 2 to be taken", func() bool { return lines.held(caller) == 2 })
	if _, err := s2.Write([]byte(sendMessageLine(3, h.echo, "c") + sendMessageLine(4, h.echo, "d"))); err != nil {
		t.Fatal(err)
	}
	m, err := nextResponse(t, r2)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	e, _ := sc["error"].(map[string]any)
	if id, _ := m["id"].(float64); id != 4 || e["code"] != string(agent.CodeAgentBusy) {
		t.Fatalf("the fourth call of a peer bound to 3: %v, want agent_busy for id 4", m)
	}
	// Cancelling one frees its place.
	if _, err := s1.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if m, err := nextResponse(t, r1); err != nil || m["id"] != float64(1) {
		t.Fatalf("after cancelling call 1: %v, %v; want its response", m, err)
	}
	if _, err := s2.Write([]byte(sendMessageLine(5, h.echo, "e"))); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "call 5 to be taken", func() bool { return len(b.ended) == 1 && lines.held(caller) == 3 })
}

// TestLinesIdleStreamForgotten: a host's stream closed when idle takes the
// client's slot for the host with it (the client holds only the hosts its
// people talk to), and the next turn opens a new stream.
func TestLinesIdleStreamForgotten(t *testing.T) {
	h := newTestHost(t)
	host, portal := mcpTestNode(t), mcpTestNode(t)
	var streams atomic.Int64
	lines := NewLinesHandler(h.cfg)
	host.ServeMCPLines(func(ctx context.Context, caller string, s network.Stream) {
		streams.Add(1)
		lines.ServeStream(ctx, caller, s)
	})
	mcpIntroduce(portal, host)
	client := testClient(t, portal)
	send := func() {
		t.Helper()
		if reply, err := client.Send(t.Context(), host.PeerID(), agent.Turn{AgentID: h.echo, Text: "hi"}, nil); err != nil || reply != "hi" {
			t.Fatalf("Send = %q, %v", reply, err)
		}
	}
	send()
	client.linesMu.Lock()
	slot := client.lines[host.PeerID()]
	client.linesMu.Unlock()
	if slot == nil || slot.conn == nil {
		t.Fatal("no lines stream to the host after a turn")
	}
	slot.conn.closeIfIdle()
	client.linesMu.Lock()
	n := len(client.lines)
	client.linesMu.Unlock()
	if n != 0 {
		t.Errorf("the client still holds %d hosts after the stream closed idle", n)
	}
	send()
	if got := streams.Load(); got != 2 {
		t.Errorf("the host saw %d streams, want 2 (one before the idle close, one after)", got)
	}
}
