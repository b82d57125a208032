package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestA2ABackendThroughAnotherNode: node A imports node B's echo agent by
// its A2A card URL (`agentsite import --format a2a-cards`); the card is
// A2A 1.0, signed by B, and the import pins B as its signer. A turn to the
// imported agent on A then goes through A's a2a backend to B's A2A 1.0
// server and back. Before the 1.0 client, the import refused B's card.
func TestA2ABackendThroughAnotherNode(t *testing.T) {
	b := startNode(t, t.TempDir())
	defer b.Close()
	var list agentList
	getJSON(t, b.HTTPURL()+"/api/v1/agents?q=echo", &list)
	echoID := ""
	for _, a := range list.Agents {
		if a.Name == "echo" {
			echoID = a.ID
		}
	}
	if echoID == "" {
		t.Fatalf("no echo agent on B: %+v", list)
	}
	cardURL := b.HTTPURL() + "/a2a/" + echoID + "/agent-card.json"

	dirA := t.TempDir()
	file := filepath.Join(t.TempDir(), "cards.txt")
	if err := os.WriteFile(file, []byte(cardURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An import reaches a private address only where --allow-endpoint says.
	out, _, err := runCmd(t, "import", "--format", "a2a-cards", "--data-dir", dirA, "--allow-endpoint", strings.TrimPrefix(b.HTTPURL(), "http://"), file)
	if err != nil || !strings.Contains(out, "1 created") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	a := startNode(t, dirA, "--allow-private-endpoints", "--demo-agents=false")
	defer a.Close()
	getJSON(t, a.HTTPURL()+"/api/v1/agents?tag=a2a", &list)
	if len(list.Agents) != 1 || !list.Agents[0].Local {
		t.Fatalf("imported agents on A: %+v", list.Agents)
	}
	imported := list.Agents[0].ID
	backend, err := a.Store.GetBackend(t.Context(), imported)
	if err != nil {
		t.Fatal(err)
	}
	if backend.URL != cardURL || backend.CardSigner != b.Node.PeerID() {
		t.Fatalf("backend %v signer %q; want B's card, signed by B (%s)", backend, backend.CardSigner, b.Node.PeerID())
	}
	got, err := sendMessage(context.Background(), a.HTTPURL(), imported, "hello through A2A 1.0")
	if err != nil || got.Reply != "hello through A2A 1.0" {
		t.Fatalf("turn through A's a2a backend: %+v, %v", got, err)
	}
}
