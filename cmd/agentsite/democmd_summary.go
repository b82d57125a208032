package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// printSummary tells the user where the planet is and what to try.
func (d *demo) printSummary(token string, took time.Duration) {
	w := d.out
	a := d.nodes[0]
	fmt.Fprintf(w, "\nAgentSite local planet is up: three nodes in %.1fs.\n\n", took.Seconds())
	for _, n := range d.nodes {
		fmt.Fprintf(w, "  %s  portal %s   (%s, pid %d)\n", n.name, n.baseURL(), n.engine, n.proc.Pid())
		builtins := ""
		if n.name == demoBuiltinsNode {
			builtins = " + echo, calculator"
		}
		fmt.Fprintf(w, "          hosts  %s (tags %s)%s\n", n.spec.Name, strings.Join(n.spec.Tags, ", "), builtins)
		if n == a && d.plannerID != "" {
			fmt.Fprintf(w, "                 + planner (an agent that calls agents, on a scripted demo model)\n")
		}
		fmt.Fprintf(w, "          p2p    %s\n", n.p2pAddr)
		fmt.Fprintf(w, "          data   %s   log %s\n", n.dataDir, n.logPath)
	}
	fmt.Fprintf(w, "\nnode-b and node-c bootstrapped through node-a:\n  --bootstrap %s\n", a.p2pAddr)
	fmt.Fprintf(w, "Join with a fourth node of your own:\n  bin/agentsite serve --data-dir %s --http-addr 127.0.0.1:%d --bootstrap %s\n",
		filepath.Join(d.cfg.Dir, "node-d"), d.cfg.BasePort+len(d.nodes), a.p2pAddr)
	b, c := d.nodes[1], d.nodes[2]
	if d.plannerID != "" {
		fmt.Fprintf(w, "\nThree nodes, one question: open the planner's chat on node-a\n  %s/chat/%s\n", a.baseURL(), d.plannerID)
		fmt.Fprintf(w, "and ask \"what is 12*(3+4)?\". It finds the calculator on %s, asks it, asks the haiku agent\n"+
			"on %s for a poem about the result, and answers with both; each step shows as it happens.\n"+
			"Its model is a script the demo serves (%q), not a real LLM.\n", b.name, c.name, demoPlannerModel)
		fmt.Fprintf(w, "Or from a shell (the answer lists its steps):\n  curl -s -H 'Content-Type: application/json' -d '{\"text\":\"what is 12*(3+4)?\"}' %s/api/v1/agents/%s/messages\n",
			a.baseURL(), d.plannerID)
	}
	fmt.Fprintf(w, "\nTry:\n")
	fmt.Fprintf(w, "  %s/agents                  every portal lists all agents of the planet\n", b.baseURL())
	fmt.Fprintf(w, "  curl -s '%s/api/v1/agents?tag=language'   node-a's translator, seen from node-c\n", c.baseURL())
	fmt.Fprintf(w, "  export TOKEN=%s   # operator token of this run, for POST /api/v1/agents\n", token)
	fmt.Fprintf(w, "\nPress Ctrl-C to stop all three nodes.\n\n")
}
