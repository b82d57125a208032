package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/cmd/internal/procs"
	"github.com/agentsite/agentsite/handlers/apiwire"
)

// demoAgentSpec is an agent the demo registers on one of its nodes: each
// node's own, so each portal shows listings that can only have come from
// its peers, and node-a's planner.
type demoAgentSpec struct {
	Name, DisplayName, Description, Example string
	Tags                                    []string
	// Skill describes the agent's one skill; Backend answers it.
	Skill   string
	Backend agent.Backend
}

// input is the registration body for the spec: one skill.
func (s demoAgentSpec) input() apiwire.AgentInput {
	return apiwire.AgentInput{
		Name: s.Name, DisplayName: s.DisplayName, Description: s.Description, Tags: s.Tags, Version: "1.0.0",
		Skills: []agent.Skill{{
			ID: s.Name, Name: s.DisplayName, Description: s.Skill, Examples: []string{s.Example},
		}},
		Backend: s.Backend,
	}
}

// demoEcho is the backend of the demo agents that only show a listing
// travelling the network.
var demoEcho = agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}

// demoSpecs are the three nodes of the local planet, in start order; the
// first is the one the others bootstrap through.
var demoSpecs = []struct {
	name  string
	agent demoAgentSpec
}{
	{"node-a", demoAgentSpec{
		Name: "translator", DisplayName: "Translator",
		Description: "Hosted by demo node A. Runs the builtin echo backend, so it repeats what you send; open it on node B or C to see a listing travel the network.",
		Tags:        []string{"language", "translation", "demo"}, Example: "bonjour le monde",
		Skill: "Echoes the message (builtin demo backend).", Backend: demoEcho,
	}},
	{"node-b", demoAgentSpec{
		Name: "weather", DisplayName: "Weather",
		Description: "Hosted by demo node B. Runs the builtin echo backend; chat with it from node A's portal and the message is routed to node B.",
		Tags:        []string{"weather", "forecast", "demo"}, Example: "rain in Paris tomorrow?",
		Skill: "Echoes the message (builtin demo backend).", Backend: demoEcho,
	}},
	{"node-c", demoAgentSpec{
		Name: "haiku", DisplayName: "Haiku",
		Description: "Hosted by demo node C. Runs the builtin haiku backend: send it a word and it writes three short lines about it. Node A's planner asks it for a poem about the sums it works out.",
		Tags:        []string{"poetry", "haiku", "demo"}, Example: "autumn",
		Skill:   "Writes a haiku about the longest word of the message (builtin demo backend).",
		Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "haiku"},
	}},
}

// demoBuiltinsNode is the demo node that hosts the demo agents (echo and
// calculator, --demo-agents); the others host only their own.
const demoBuiltinsNode = "node-b"

// demoNode is one child `agentsite serve` process.
type demoNode struct {
	name     string
	spec     demoAgentSpec
	dataDir  string
	logPath  string
	httpAddr string
	dbURL    string // empty: embedded SQLite
	engine   string // what the summary says about the store
	// allowPrivate: the node may call agent backends on 127.0.0.1 (node-a,
	// whose planner's scripted model the demo serves there).
	allowPrivate bool

	proc *procs.Process // nil until started

	peerID  string
	p2pAddr string // the multiaddr others bootstrap through
	agentID string
}

// baseURL is the node's portal, e.g. http://127.0.0.1:8081.
func (n *demoNode) baseURL() string { return "http://" + n.httpAddr }

// plan lays out the three nodes: ports, data dirs, logs, and node-a's store
// (creating the Postgres database if needed, or falling back to SQLite).
func (d *demo) plan(ctx context.Context) error {
	for i, s := range demoSpecs {
		n := &demoNode{
			name:     s.name,
			spec:     s.agent,
			dataDir:  filepath.Join(d.cfg.Dir, s.name),
			logPath:  filepath.Join(d.cfg.Dir, s.name+".log"),
			httpAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(d.cfg.BasePort+i)),
			engine:   "SQLite",
			// node-a hosts the planner
			allowPrivate: i == 0,
		}
		// A busy port would have /readyz answered by someone else's server.
		ln, err := net.Listen("tcp", n.httpAddr)
		if err != nil {
			return fmt.Errorf("%s: port %s is taken (another demo or node running?); choose other ports with --base-port: %w", s.name, n.httpAddr, err)
		}
		_ = ln.Close()
		d.nodes = append(d.nodes, n)
	}
	return d.planPostgres(ctx, d.nodes[0])
}

// startAndWait starts one node, logging to its file, and waits until it
// answers /readyz; then it reads the node's peer ID and multiaddr.
func (d *demo) startAndWait(ctx context.Context, bin, token string, n *demoNode, bootstrap string) error {
	what := n.engine
	if bootstrap != "" {
		what += ", joining through node-a"
	}
	d.progress("%s: starting on %s (%s) …", n.name, n.baseURL(), what)
	args := []string{"serve",
		"--data-dir", n.dataDir,
		"--http-addr", n.httpAddr,
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--node-name", n.name,
		// echo and calculator on one node only (node-b, whose calculator
		// node-a's planner asks): one card each on the hub, not three.
		fmt.Sprintf("--demo-agents=%v", n.name == demoBuiltinsNode),
		"--echo-delay", "50ms", // the echo streams word by word, visibly
		"--log-level", "info",
	}
	if bootstrap != "" {
		args = append(args, "--bootstrap", bootstrap)
	}
	if n.allowPrivate {
		args = append(args, "--allow-private-endpoints")
	}
	// The operator token and database URL travel in the environment, not
	// argv, so `ps` does not show them.
	env := []string{EnvName("operator-token") + "=" + token}
	if n.dbURL != "" {
		env = append(env, EnvName("database-url")+"="+n.dbURL)
	}
	p, err := procs.Start(procs.Spec{
		Name: n.name, Binary: bin, Args: args, LogPath: n.logPath,
		DropEnv: []string{"AGENTSITE_"}, Env: env,
	})
	if err != nil {
		return err
	}
	n.proc = p
	began := time.Now()
	if err := p.WaitReady(ctx, n.baseURL()+"/readyz", d.cfg.StartTimeout); err != nil {
		return err
	}
	var info apiwire.Node
	if err := d.getJSON(ctx, n.baseURL()+"/api/v1/node", &info); err != nil {
		return fmt.Errorf("%s: read /api/v1/node: %w", n.name, err)
	}
	if len(info.Addrs) == 0 {
		return fmt.Errorf("%s: /api/v1/node lists no p2p addresses; see %s", n.name, n.logPath)
	}
	n.peerID, n.p2pAddr = info.PeerID, info.Addrs[0]
	for _, a := range info.Addrs {
		if strings.Contains(a, "/tcp/") {
			n.p2pAddr = a
			break
		}
	}
	d.progress("%s: ready in %.1fs, peer %s", n.name, time.Since(began).Seconds(), n.peerID)
	return nil
}

// stopAll stops every node it started, all at once (SIGTERM, SIGKILL after
// demoStopTimeout), and reports how each ended and how long it took (each
// node's log ends with its own line on what it stopped).
func (d *demo) stopAll() error {
	errs := make([]error, len(d.nodes))
	took := make([]time.Duration, len(d.nodes))
	var wg sync.WaitGroup
	for i, n := range d.nodes {
		if n.proc != nil {
			wg.Go(func() {
				began := time.Now()
				errs[i] = n.proc.Stop(demoStopTimeout)
				took[i] = time.Since(began)
			})
		}
	}
	wg.Wait()
	for i, n := range d.nodes {
		switch {
		case n.proc == nil || errs[i] != nil:
		case n.proc.Err() != nil:
			d.progress("%s stopped in %.1fs (%v)", n.name, took[i].Seconds(), n.proc.Err())
		default:
			d.progress("%s stopped in %.1fs", n.name, took[i].Seconds())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("demo nodes did not stop cleanly: %w", err)
	}
	return nil
}
