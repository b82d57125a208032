package peermcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/agentsite/agentsite/agent"
)

// TestLinesCall: a host that serves both protocols is called in the lines
// protocol; turns at once each stream their own chunks in order and get
// their exact reply, and the host's refusals map back as over HTTP.
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
			if err != nil || reply != text || strings.Join(got, "") != text {
				t.Errorf("turn %d: Send = %q, %v; streamed %q", i, reply, err, got)
			}
		})
	}
	wg.Wait()
	if n := streams.Load(); n != 20 {
		t.Errorf("the host answered %d lines streams for 20 turns", n)
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

// TestLinesProtocolRefusals: the lines protocol answers a send_message
// call and nothing else: what is not JSON-RPC gets a parse error, another
// method gets "method not found" naming the protocol to use, and a stream
// that carries a second request after the first is reset.
func TestLinesProtocolRefusals(t *testing.T) {
	h := newTestHost(t)
	host, portal := mcpTestNode(t), mcpTestNode(t)
	host.ServeMCPLines(NewLinesHandler(h.cfg).ServeStream)
	mcpIntroduce(portal, host)
	if err := portal.ConnectHost(t.Context(), host.PeerID()); err != nil {
		t.Fatal(err)
	}
	if !portal.SpeaksMCPLines(host.PeerID()) {
		t.Fatal("identify did not say the host speaks the lines protocol")
	}
	ask := func(request string) (map[string]any, error) {
		t.Helper()
		s, err := portal.OpenMCPLines(t.Context(), host.PeerID())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Write([]byte(request)); err != nil {
			return nil, err
		}
		r := bufio.NewReader(s)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, err
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%q: the answer %q is not JSON", request, line)
			}
			if _, ok := m["id"]; ok {
				return m, nil // the response, after any notifications
			}
		}
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	m, err := ask("hello\n")
	if err != nil || code(m) != rpcParseError {
		t.Errorf("not JSON-RPC: %v, %v; want error %d", m, err, rpcParseError)
	}
	m, err = ask(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	if e, _ := m["error"].(map[string]any); err != nil || code(m) != rpcMethodNotFound || !strings.Contains(fmt.Sprint(e["message"]), agent.MCPProtocol) {
		t.Errorf("tools/list: %v, %v; want error %d naming %s", m, err, rpcMethodNotFound, agent.MCPProtocol)
	}
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"agent_id":%q,"text":"hi"},"_meta":{"progressToken":"p"}}}`, h.echo)
	m, err = ask(call + "\n")
	if res, _ := m["result"].(map[string]any); err != nil || res == nil || res["isError"] == true {
		t.Errorf("one call: %v, %v; want its result", m, err)
	}
	if m, err := ask(call + "\n" + call + "\n"); err == nil && m["result"] != nil {
		t.Errorf("two calls on one stream: answered %v, want the stream reset", m)
	}
}
