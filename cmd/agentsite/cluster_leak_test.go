package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestClusterShutdownReleasesEverything runs a small planet through a
// register/propagate cycle, closes every node the way the binary does, and
// checks that their goroutines are gone and their ports free again.
func TestClusterShutdownReleasesEverything(t *testing.T) {
	// Warm up once: some libraries start process-wide goroutines on first
	// use, which are not per-node leaks.
	startClusterNode(t, nodeOpts{}).stop()
	before := len(goroutines())

	var nodes []*clusterNode
	for i := range 4 {
		o := nodeOpts{postgres: i == 1}
		if i > 0 {
			o.bootstrap = []string{nodes[0].addr()}
		}
		nodes = append(nodes, startClusterNode(t, o))
	}
	var ids []string
	for i, n := range nodes {
		ids = append(ids, n.register(fmt.Sprintf("leak-check-%d", i)).ID)
	}
	for _, n := range nodes {
		waitfor.Until(t, 15*time.Second, "every node to learn every agent", func() bool { return n.hasAll(ids...) })
	}
	var ports []string
	for _, n := range nodes {
		ports = append(ports, n.portsOf()...)
	}
	for _, n := range nodes {
		n.stop()
	}
	waitfor.Until(t, 10*time.Second, "every HTTP and libp2p port to be free again", func() bool { return portsReleased(ports) })
	waitGoroutines(t, before)
}
