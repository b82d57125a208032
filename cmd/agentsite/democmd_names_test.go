package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// checkDemoNames: the demo's nodes call themselves node-a, node-b and
// node-c (GET /api/v1/node), and the demo agents (echo, calculator) are
// hosted once, on node-b, so node-a lists one of each, not three.
func checkDemoNames(t *testing.T, base int) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	var hostB string
	for i, s := range demoSpecs {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/node", base+i))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var n apiwire.Node
		err = json.NewDecoder(resp.Body).Decode(&n)
		resp.Body.Close()
		if err != nil || n.Name != s.name {
			t.Errorf("node %d calls itself %q (%v), want %s", i, n.Name, err, s.name)
		}
		if s.name == demoBuiltinsNode {
			hostB = n.PeerID
		}
	}
	waitfor.Until(t, 30*time.Second, "node-a to list one echo and one calculator, node-b's", func() bool {
		count := map[string]int{}
		for _, a := range demoTestAgents(fmt.Sprintf("http://127.0.0.1:%d", base)) {
			if a.Name == "echo" || a.Name == "calculator" {
				if a.HostPeerID != hostB {
					t.Fatalf("%s is hosted by %s, want only node-b (%s)", a.Name, a.HostPeerID, hostB)
				}
				count[a.Name]++
			}
		}
		return count["echo"] == 1 && count["calculator"] == 1
	})
}
