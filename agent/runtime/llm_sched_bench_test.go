package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/agent/runtime/modelsched"
)

// The load of BenchmarkModelScheduler (make bench-scheduler): a model
// server that works on modelParallel requests at once, modelService each,
// and queues the rest in arrival order (what a vLLM or Ollama server with
// a parallel setting does): 16 requests a second at most. Twenty callers
// send for benchWindow: one every 140 ms (7.1 a second), nineteen ten
// times less often each (0.71 a second, 13.6 together, 85 % of the
// model): 20.7 a second offered, 1.3 times what the model can take.
const (
	modelParallel = 4
	modelService  = 250 * time.Millisecond
	benchWindow   = 20 * time.Second
	heavyEvery    = 140 * time.Millisecond
	lightEvery    = 1400 * time.Millisecond
	lightCallers  = 19
)

// slowModel is the model server of the benchmark: its slots are a channel,
// whose blocked senders go in arrival order.
type slowModel struct {
	slots chan struct{}
	mu    sync.Mutex
	start map[string]time.Time // request text → when the model took it
}

func (m *slowModel) script(req fakellm.Request) fakellm.Reply {
	m.slots <- struct{}{}
	m.mu.Lock()
	m.start[req.LastUser()] = time.Now()
	m.mu.Unlock()
	time.Sleep(modelService)
	<-m.slots
	return fakellm.Reply{Text: "ok"}
}

type benchCall struct {
	caller string
	heavy  bool
	at     time.Duration // when it is sent, from the start
	text   string
	sent   time.Time
	done   time.Time
	err    error
}

// BenchmarkModelScheduler runs the load through the runtime without a
// scheduler (every request goes to the model at once and waits in its
// queue) and with one (4 at the model, round robin by caller, 64 waiting
// at most), and reports throughput, waits per class of caller and Jain's
// fairness index of what each caller got against its max-min fair share.
func BenchmarkModelScheduler(b *testing.B) {
	for range b.N {
		for _, mode := range []string{"none", "scheduler"} {
			runSchedulerLoad(b, mode)
		}
	}
}

func runSchedulerLoad(b *testing.B, mode string) {
	model := &slowModel{slots: make(chan struct{}, modelParallel), start: map[string]time.Time{}}
	srv := httptest.NewServer(&fakellm.Server{Model: "demo", Script: model.script})
	defer srv.Close()
	var s *modelsched.Scheduler
	if mode == "scheduler" {
		s = mustNew(b, modelsched.Options{Limit: modelParallel, MaxQueue: 64})
	}
	be := agent.Backend{Kind: agent.BackendLLM, URL: srv.URL + "/v1", Model: "demo"}
	rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) { return be, nil },
		runtime.RuntimeOptions{AllowPrivate: true, Timeout: 5 * time.Minute, Models: s})
	defer rt.Close()

	var calls []*benchCall
	for at := time.Duration(0); at < benchWindow; at += heavyEvery {
		calls = append(calls, &benchCall{caller: "heavy", heavy: true, at: at})
	}
	for i := 1; i <= lightCallers; i++ {
		for at := time.Duration(i) * lightEvery / lightCallers; at < benchWindow; at += lightEvery {
			calls = append(calls, &benchCall{caller: fmt.Sprintf("light%02d", i), at: at})
		}
	}
	for i, c := range calls {
		c.text = fmt.Sprintf("%s #%d", c.caller, i)
	}
	begin := time.Now()
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(begin.Add(c.at)))
			c.sent = time.Now()
			_, c.err = rt.Answer(agent.WithCaller(context.Background(), c.caller), agent.Turn{AgentID: idSelf, Text: c.text}, nil)
			c.done = time.Now()
		}()
	}
	wg.Wait()
	end := time.Now()

	var heavyWait, lightWait []time.Duration
	refused, done := 0, 0
	served := map[string]float64{} // taken by the model within the window
	demand := map[string]float64{}
	for _, c := range calls {
		demand[c.caller]++
		if c.err != nil {
			if !errors.Is(c.err, agent.ErrModelBusy) {
				b.Fatalf("%s: %v", c.text, c.err)
			}
			refused++
			continue
		}
		done++
		started := model.start[c.text]
		w := started.Sub(c.sent)
		if c.heavy {
			heavyWait = append(heavyWait, w)
		} else {
			lightWait = append(lightWait, w)
		}
		if started.Sub(begin) < benchWindow {
			served[c.caller]++
		}
	}
	total := 0.0
	for _, n := range served {
		total += n
	}
	fair := maxMinFair(demand, total)
	var xs []float64
	for caller := range demand {
		xs = append(xs, served[caller]/fair[caller])
	}
	jain := jainIndex(xs)
	secs := end.Sub(begin).Seconds()
	fmt.Printf("model scheduler %-9s  %3d sent, %3d answered, %2d refused busy in %.1fs: %.1f answered/s; wait heavy p50 %s p99 %s, light p50 %s p99 %s; Jain %.2f\n",
		mode, len(calls), done, refused, secs, float64(done)/secs,
		pct(heavyWait, 50), pct(heavyWait, 99), pct(lightWait, 50), pct(lightWait, 99), jain)
	b.ReportMetric(float64(done)/secs, mode+"-answered/s")
	b.ReportMetric(pct(lightWait, 99).Seconds()*1000, mode+"-light-p99-ms")
	b.ReportMetric(jain, mode+"-jain")
}

// maxMinFair is each caller's max-min fair share of capacity (water
// filling): no caller gets more than it asked for, and what one leaves
// goes to the others equally.
func maxMinFair(demand map[string]float64, capacity float64) map[string]float64 {
	share := map[string]float64{}
	left := map[string]float64{}
	for k, d := range demand {
		left[k] = d
	}
	for len(left) > 0 && capacity > 1e-9 {
		each := capacity / float64(len(left))
		for k, d := range left {
			give := min(d, each)
			share[k] += give
			capacity -= give
			if left[k] = d - give; left[k] <= 1e-9 {
				delete(left, k)
			}
		}
	}
	return share
}

// jainIndex is (Σx)² / (n·Σx²): 1 when every x is equal, 1/n when one
// caller has all.
func jainIndex(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)].Round(time.Millisecond)
}
