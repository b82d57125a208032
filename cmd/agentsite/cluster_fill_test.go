package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestMirrorFillIsVisible: a host registers agents through the batch API
// and a mirror joins it; the mirror's GET /api/v1/node then says, for the
// host as a peer, that it holds all it announces and what the sync read,
// its GET /api/v1/agents counts them (total), and its /nodes page says
// "holding N of N" for the host. Real nodes, real sync.
func TestMirrorFillIsVisible(t *testing.T) {
	const n = 30
	// Records that live 10 minutes: the 6 s of the other cluster tests
	// make a loaded host re-sign its 30 records faster than it can, and a
	// record that expired on the way is held offline, which the host's
	// claim does not count.
	o := nodeOpts{ttl: 10 * time.Minute}
	host := startClusterNode(t, o)
	items := make([]apiwire.AgentInput, n)
	for i := range items {
		items[i] = apiwire.AgentInput{Name: fmt.Sprintf("fill-%02d", i), DisplayName: fmt.Sprintf("Fill %d", i),
			Description: "An agent the mirror fills with.", Tags: []string{"fill"}}
		items[i].Backend.Kind, items[i].Backend.Builtin = "builtin", "echo"
	}
	if code, body := host.api("POST", "/api/v1/agents:batch", apiwire.BatchRequest{Items: items}); code != http.StatusOK {
		t.Fatalf("batch: %d %s", code, body)
	}
	mo := o
	mo.bootstrap = []string{host.addr()}
	mirror := startClusterNode(t, mo)

	var peer apiwire.PeerSync
	waitfor.Until(t, 2*time.Minute, "the mirror to say it holds all the host announces", func() bool {
		var node apiwire.Node
		if code, body := mirror.api("GET", "/api/v1/node", nil); code != http.StatusOK || json.Unmarshal(body, &node) != nil || node.Sync == nil {
			return false
		}
		for _, p := range node.Sync.Peers {
			if p.PeerID == host.peerID() && p.Announced != nil && *p.Announced == n && p.Held == n {
				peer = p
				return true
			}
		}
		return false
	})
	if peer.Bytes <= 0 || peer.Records["new"]+peer.Records["known"]+peer.Records["held"] < n {
		t.Errorf("the host's sync row = %+v: want the bytes read and the %d records it brought", peer, n)
	}
	var list apiwire.AgentList
	code, body := mirror.api("GET", "/api/v1/agents?tag=fill&limit=1", nil)
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil || list.Total == nil || *list.Total != n {
		t.Errorf("the mirror's total for tag=fill: %d %s, want %d", code, body, n)
	}
	code, body = mirror.api("GET", "/nodes", nil)
	if want := fmt.Sprintf("holding %d of %d", n, n); code != http.StatusOK || !strings.Contains(string(body), want) {
		t.Errorf("the mirror's /nodes does not say %q for the host", want)
	}
}
