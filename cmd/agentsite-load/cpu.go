package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cpuMeter samples, from /proc, the CPU time of the processes that share
// this machine during a run: each agentsite server, every postgres process
// (the database's backends, whoever's they are), this load generator, and
// the machine as a whole, so a report can say what used the CPUs.
type cpuMeter struct {
	servers []*server
}

// cpuSample is the CPU time, in clock ticks, used so far.
type cpuSample struct {
	ok       bool
	total    uint64         // all CPUs, busy and idle (/proc/stat)
	idle     uint64         // idle and iowait
	servers  []uint64       // user+system of each server
	postgres map[int]uint64 // user+system of each process named postgres, by pid
	self     uint64         // user+system of this process
}

// cpuShare is one consumer's CPU use over an interval, in percent of one
// CPU (as top shows it).
type cpuShare struct {
	Name    string
	Percent float64
}

// sample reads the counters now; ok is false where /proc is missing.
func (m *cpuMeter) sample() cpuSample {
	var s cpuSample
	if m == nil {
		return s
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return s
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s
		}
		s.total += n
		if i == 3 || i == 4 {
			s.idle += n
		}
	}
	for _, srv := range m.servers {
		t, _ := procTicks(fmt.Sprintf("/proc/%d/stat", srv.proc.Pid()))
		s.servers = append(s.servers, t)
	}
	s.self, _ = procTicks("/proc/self/stat")
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	s.postgres = make(map[int]uint64)
	for _, p := range stats {
		if t, comm := procTicks(p); comm == "postgres" {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			s.postgres[pid] = t
		}
	}
	s.ok = true
	return s
}

// shares is the CPU use between two samples, in percent of one CPU, of
// each server, Postgres, the load generator, everything else, and idle.
func (m *cpuMeter) shares(a, b cpuSample, cpus int) []cpuShare {
	if !a.ok || !b.ok || b.total <= a.total || len(a.servers) != len(b.servers) {
		return nil
	}
	scale := 100 * float64(cpus) / float64(b.total-a.total)
	pct := func(x, y uint64) float64 {
		if y < x {
			return 0
		}
		return float64(y-x) * scale
	}
	var out []cpuShare
	var known float64
	for i := range a.servers {
		p := pct(a.servers[i], b.servers[i])
		known += p
		out = append(out, cpuShare{Name: m.servers[i].name, Percent: p})
	}
	// Per process: a backend that ends between the samples takes its
	// ticks with it, and one that starts counts from zero.
	var pg float64
	for pid, t := range b.postgres {
		pg += pct(a.postgres[pid], t)
	}
	self := pct(a.self, b.self)
	idle := pct(a.idle, b.idle)
	known += pg + self
	other := max(0, 100*float64(cpus)-idle-known)
	return append(out,
		cpuShare{Name: "postgres (all its processes)", Percent: pg},
		cpuShare{Name: "load generator", Percent: self},
		cpuShare{Name: "other", Percent: other},
		cpuShare{Name: "idle", Percent: idle})
}

// procTicks reads utime+stime and the command name from a /proc/<pid>/stat
// file; zero and "" if it is gone.
func procTicks(path string) (ticks uint64, comm string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, ""
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, ""
	}
	comm = s[open+1 : end]
	f := strings.Fields(s[end+1:]) // f[0] is field 3 (state); utime and stime are fields 14 and 15
	if len(f) < 13 {
		return 0, comm
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, comm
	}
	return u + st, comm
}

// cpuText formats shares as "replica 1 95 %, postgres 60 %, ...".
func cpuText(shares []cpuShare) string {
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = fmt.Sprintf("%s %.0f %%", s.Name, s.Percent)
	}
	return strings.Join(parts, ", ")
}
