package main

import (
	"bytes"
	"context"
	"runtime/pprof"
	"testing"

	"github.com/google/pprof/profile"
)

// nodeLabel is the pprof label that names the node a goroutine works for
// (nodeOpts.label): every goroutine a node starts inherits it from Run,
// and so do those they start (connections, streams, turns, the
// conversation writer), so a CPU profile splits the process's CPU by node.
const nodeLabel = "node"

// runLabelled runs f with the goroutine labelled node=name (none when name
// is empty).
func runLabelled(name string, f func()) {
	if name == "" {
		f()
		return
	}
	pprof.Do(context.Background(), pprof.Labels(nodeLabel, name), func(context.Context) { f() })
}

// cpuSplit profiles the process's CPU while it runs, to split it by node.
type cpuSplit struct {
	buf bytes.Buffer
	on  bool
}

// startCPUSplit starts the CPU profile; it is off (split reports nothing)
// when a profile already runs (go test -cpuprofile).
func startCPUSplit() *cpuSplit {
	s := &cpuSplit{}
	s.on = pprof.StartCPUProfile(&s.buf) == nil
	return s
}

// split stops the profile and returns the CPU it sampled per node label
// ("" for the rest: the clients, the collector, the runtime), in
// nanoseconds; nil when it was off or cannot be read.
func (s *cpuSplit) split(tb testing.TB) map[string]int64 {
	if !s.on {
		return nil
	}
	pprof.StopCPUProfile()
	p, err := profile.Parse(&s.buf)
	if err != nil {
		tb.Logf("reading the CPU profile: %v", err)
		return nil
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	out := map[string]int64{}
	for _, sm := range p.Sample {
		name := ""
		if v := sm.Label[nodeLabel]; len(v) > 0 {
			name = v[0]
		}
		out[name] += sm.Value[idx]
	}
	return out
}
