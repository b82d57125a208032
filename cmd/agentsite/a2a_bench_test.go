package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// BenchmarkA2ASend measures A2A against its budget (BENCHMARKS.md):
// concurrent A2A clients (5, 10
// and 20, and 1 for the uncontended round trip) calling message/send
// (blocking) on node A's POST /a2a/{id} for the builtin echo agent.
// "remote": the agent is hosted on node B, so every turn goes A → libp2p
// → B and back; "local": the agent is on A itself, for comparison. Each
// sub-benchmark reports turns/s and the p50/p99 round trip.
//
// Each client keeps its own contextId (the first turn starts a
// conversation, the rest continue it), as A2A clients holding a
// conversation do and as BenchmarkChatTurns' clients do, so the numbers
// compare with AgentChat's: every turn stores the user message and the
// reply, and sends the conversation's last 40 messages to the agent (over
// libp2p, for the remote one). "remote-fresh" starts a new conversation
// every turn instead (no history to read or send), to show what the
// history costs. "remote-v1" is "remote" in A2A 1.0 (SendMessage with
// A2A-Version: 1.0, the task converted to 1.0's shape on the way out).
//
//	go test -run '^$' -bench BenchmarkA2ASend -benchtime 1x ./cmd/agentsite/
func BenchmarkA2ASend(b *testing.B) {
	fast := []string{"--chat-rate-limit", "100000000"}
	a := startClusterNode(b, nodeOpts{extra: fast, heartbeat: time.Second, ttl: time.Hour})
	host := startClusterNode(b, nodeOpts{bootstrap: []string{a.addr()}, extra: fast, heartbeat: time.Second, ttl: time.Hour})
	onB := host.register("remote-echo")
	onA := a.register("local-echo")
	waitfor.Until(b, 20*time.Second, "A to see B's echo agent online", func() bool {
		code, got := a.agent(onB.ID)
		return code == http.StatusOK && got.Status == "online" && !got.Local
	})
	const perRun = 2000 // turns per concurrency level
	for _, where := range []struct {
		name    string
		agentID string
		fresh   bool
		v1      bool
	}{{"remote", onB.ID, false, false}, {"remote-v1", onB.ID, false, true}, {"remote-fresh", onB.ID, true, false}, {"local", onA.ID, false, false}} {
		for _, c := range []int{1, 5, 10, 20} {
			b.Run(fmt.Sprintf("%s/c=%d", where.name, c), func(b *testing.B) {
				// One keep-alive connection per client, closed after the
				// run: the node caps connections per IP (64).
				tr := &http.Transport{MaxIdleConnsPerHost: c}
				defer tr.CloseIdleConnections()
				client := &http.Client{Transport: tr}
				for b.Loop() {
					lat, took := closedLoop(c, perRun, func() func(string) {
						if where.v1 {
							return a2aSenderV1(b, client, a.m.HTTPURL()+"/a2a/"+where.agentID)
						}
						return a2aSender(b, client, a.m.HTTPURL()+"/a2a/"+where.agentID, where.fresh)
					})
					reportTurns(b, lat, took)
				}
			})
		}
	}
}

// closedLoop runs total turns with c concurrent clients, each made by
// newClient and sending its next turn as soon as the last one is answered,
// and returns every round-trip time and the wall time.
func closedLoop(c, total int, newClient func() func(string)) ([]time.Duration, time.Duration) {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for w := range c {
		wg.Go(func() {
			turn := newClient()
			mine := make([]time.Duration, 0, total/c)
			for i := range total / c {
				t0 := time.Now()
				turn(fmt.Sprintf("hello %d from client %d", i, w))
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat, time.Since(start)
}

// reportTurns reports a closed-loop run: turns/s and the p50/p99 round trip.
func reportTurns(b *testing.B, lat []time.Duration, took time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/took.Seconds(), "turns/s")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// a2aSender returns a function sending one blocking message/send to the
// A2A endpoint url and checking the completed task echoes the text. The
// first turn starts a conversation; later turns continue it, unless fresh.
func a2aSender(tb testing.TB, client *http.Client, url string, fresh bool) func(string) {
	contextID := ""
	id := 0
	return func(text string) {
		id++
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
		msg.ContextID = contextID
		params, err := json.Marshal(a2a.MessageSendParams{Message: msg})
		if err != nil {
			tb.Fatal(err)
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"message/send","params":%s}`, id, params)
		resp, err := client.Post(url, "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out struct {
			Result struct {
				ContextID string `json:"contextId"`
				Status    struct {
					State string `json:"state"`
				} `json:"status"`
				Artifacts []struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"artifacts"`
			} `json:"result"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil || out.Result.Status.State != string(a2a.TaskStateCompleted) ||
			len(out.Result.Artifacts) != 1 || len(out.Result.Artifacts[0].Parts) != 1 || out.Result.Artifacts[0].Parts[0].Text != text {
			tb.Fatalf("message/send: %d %s", resp.StatusCode, raw)
		}
		if !fresh {
			contextID = out.Result.ContextID
		}
	}
}

// a2aSenderV1 is a2aSender in A2A 1.0: a blocking SendMessage, the
// answer a SendMessageResponse holding the task.
func a2aSenderV1(tb testing.TB, client *http.Client, url string) func(string) {
	contextID := ""
	id := 0
	return func(text string) {
		id++
		msg := v1.NewMessage(v1.MessageRoleUser, v1.NewTextPart(text))
		msg.ContextID = contextID
		params, err := json.Marshal(v1.SendMessageRequest{Message: msg})
		if err != nil {
			tb.Fatal(err)
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":%s}`, id, params)
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := client.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out struct {
			Result v1.StreamResponse `json:"result"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil {
			tb.Fatalf("SendMessage: %d %s", resp.StatusCode, raw)
		}
		task, ok := out.Result.Event.(*v1.Task)
		if !ok || task.Status.State != v1.TaskStateCompleted || len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].Text() != text {
			tb.Fatalf("SendMessage: %s", raw)
		}
		contextID = task.ContextID
	}
}
