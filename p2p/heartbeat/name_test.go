package heartbeat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// A heartbeat's node name is checked like its other fields: a valid one
// is read back, one that breaks agent.CheckNodeName (too long, upper
// case, look-alike letters) refuses the whole heartbeat.
func TestHeartbeatNodeName(t *testing.T) {
	_, self := newKey(t)
	now := time.Now()
	encode := func(name string) []byte {
		b, err := json.Marshal(agent.Heartbeat{PeerID: self.String(), Version: "v", SentAt: now.UTC(), IntervalMS: 10_000, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, name := range []string{"", "node-b"} {
		hb, err := decodeHeartbeat(encode(name), self, now)
		if err != nil || hb.Name != name {
			t.Errorf("name %q: %+v, %v; want it read back", name, hb, err)
		}
	}
	for _, name := range []string{"Node-B", "nоde-b" /* Cyrillic о */, strings.Repeat("n", agent.MaxNodeNameLen+1), "node b"} {
		if _, err := decodeHeartbeat(encode(name), self, now); err == nil {
			t.Errorf("name %q accepted, want the heartbeat refused", name)
		}
	}
}
