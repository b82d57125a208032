package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// BenchmarkChatTurns is the paper's experiment on AgentChat: concurrent
// clients (5, 10, 20) sending turns to the echo agent over the message API
// and the WebSocket, to an agent on the portal's own node (local) and on
// another node (cross, over MCP on libp2p). Each sub-benchmark reports
// turns/s, the p50/p99 round trip and the process's CPU per turn, and
// that CPU split by node: the portal (where the clients' turns enter),
// the host (the echo's node; a local turn enters there) and the rest.
//
//	go test -run '^$' -bench BenchmarkChatTurns -benchtime 1x ./cmd/agentsite/
func BenchmarkChatTurns(b *testing.B) {
	// Benchmark clients share one IP: lift the per-client budgets.
	fast := []string{"--chat-rate-limit", "100000000", "--max-sockets-per-ip", "64"}
	host := startClusterNode(b, nodeOpts{demo: true, extra: fast, heartbeat: time.Second, ttl: time.Hour, label: "host"})
	portal := startClusterNode(b, nodeOpts{bootstrap: []string{host.addr()}, extra: fast, heartbeat: time.Second, ttl: time.Hour, label: "portal"})
	var echoID string
	waitfor.Until(b, 20*time.Second, "the portal to learn the host's echo agent", func() bool {
		for id, a := range portal.agentIDs("all") {
			if a.Name == "echo" && !a.Local {
				echoID = id
				return true
			}
		}
		return false
	})
	const perRun = 2000 // turns per concurrency level
	for _, where := range []struct {
		name string
		node *clusterNode
	}{{"local", host}, {"cross", portal}} {
		for _, via := range []string{"api", "ws"} {
			for _, c := range []int{5, 10, 20} {
				b.Run(fmt.Sprintf("%s/%s/c=%d", where.name, via, c), func(b *testing.B) {
					for b.Loop() {
						cpu0, prof := processCPU(b), startCPUSplit()
						lat, took := runTurns(b, where.node, echoID, via, c, perRun)
						byNode := prof.split(b)
						reportTurns(b, lat, took)
						// Both nodes and the clients share this process: the
						// CPU of a turn is all of it (the clients' share is
						// the same for local and cross turns).
						b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(len(lat)), "cpu-us/turn")
						// Each node's part, from the CPU profile's samples by
						// the label its goroutines carry; "other" is the
						// clients, the collector and the runtime.
						if byNode != nil {
							for _, n := range []string{"portal", "host", ""} {
								unit := n + "-cpu-us/turn"
								if n == "" {
									unit = "other-cpu-us/turn"
								}
								b.ReportMetric(float64(byNode[n])/1e3/float64(len(lat)), unit)
							}
						}
					}
				})
			}
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runTurns sends n turns with c concurrent clients, each in its own
// conversation, and returns every round-trip time and the wall time.
func runTurns(tb testing.TB, n *clusterNode, agentID, via string, c, total int) ([]time.Duration, time.Duration) {
	return closedLoop(c, total, func() func(string) {
		if via == "ws" {
			return wsTurner(tb, n, agentID)
		}
		return apiTurner(tb, n, agentID)
	})
}

// apiTurner returns a function sending one turn via POST .../messages,
// continuing one conversation. Each client holds a session of its own
// (from the chat page), as a browser does: anonymous callers without one
// share their address's bound of replies at once.
func apiTurner(tb testing.TB, n *clusterNode, agentID string) func(string) {
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	tb.Cleanup(tr.CloseIdleConnections) // the node caps connections per IP
	client := &http.Client{Jar: jar, Transport: tr}
	resp, err := client.Get(n.m.HTTPURL() + "/chat/" + agentID)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	conv := ""
	return func(text string) {
		body, _ := json.Marshal(map[string]string{"text": text, "conversation_id": conv})
		resp, err := client.Post(n.m.HTTPURL()+"/api/v1/agents/"+agentID+"/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			ConversationID string `json:"conversation_id"`
			Reply          string `json:"reply"`
		}
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil || out.Reply != text {
			tb.Fatalf("turn: %d %s", resp.StatusCode, raw)
		}
		conv = out.ConversationID
	}
}

// wsTurner opens a chat WebSocket (after loading the chat page for a
// session) and returns a function sending one turn and reading to "done".
func wsTurner(tb testing.TB, n *clusterNode, agentID string) func(string) {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	resp, err := hc.Get(n.m.HTTPURL() + "/chat/" + agentID)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	d := websocket.Dialer{Jar: jar, HandshakeTimeout: 5 * time.Second}
	wsURL := "ws" + strings.TrimPrefix(n.m.HTTPURL(), "http") + "/api/v1/chat"
	conn, _, err := d.Dial(wsURL, http.Header{"Origin": {n.m.HTTPURL()}})
	if err != nil {
		tb.Fatalf("dial chat: %v", err)
	}
	tb.Cleanup(func() { conn.Close() })
	conv := ""
	return func(text string) {
		if err := conn.WriteJSON(map[string]string{"type": "message", "agent_id": agentID, "conversation_id": conv, "text": text}); err != nil {
			tb.Fatal(err)
		}
		var got strings.Builder
		for {
			var f struct {
				Type, Text, Code, Message string
				ConversationID            string `json:"conversation_id"`
			}
			if err := conn.ReadJSON(&f); err != nil {
				tb.Fatal(err)
			}
			switch f.Type {
			case "started":
			case "chunk":
				got.WriteString(f.Text)
			case "done":
				if got.String() != text {
					tb.Fatalf("streamed %q, want %q", got.String(), text)
				}
				conv = f.ConversationID
				return
			default:
				tb.Fatalf("chat error %s: %s", f.Code, f.Message)
			}
		}
	}
}
