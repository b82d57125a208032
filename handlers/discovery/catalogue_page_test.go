package discovery_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// A catalogue listing (a package-only MCP server) is shown on the hub
// with its install line under "Install locally" and "Not hosted: run it
// yourself", where it was listed from, without a Chat button, and search
// finds it.
func TestCatalogueListingPage(t *testing.T) {
	env := handlertest.New(t)
	in := handlertest.SimpleInput("io-github-a-files", "Files", "mcp", "not-hosted")
	in.Backend = agent.Backend{Kind: agent.BackendCatalogue}
	in.Origin = &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.github.a/files", Install: "npx -y @a/files-mcp@0.3.1"}
	l := env.SeedAgent("", in)
	doc := env.Page("/agents/"+l.Record.ID, http.StatusOK)
	if got := handlertest.Text(handlertest.MustTestid(t, doc, "agent-install")); got != "npx -y @a/files-mcp@0.3.1" {
		t.Errorf("install line = %q", got)
	}
	if got := handlertest.Text(handlertest.MustTestid(t, doc, "agent-not-hosted")); !strings.Contains(got, "Not hosted: run it yourself") {
		t.Errorf("not-hosted note = %q", got)
	}
	if got := handlertest.Text(handlertest.MustTestid(t, doc, "agent-install-locally")); got != "Install locally" {
		t.Errorf("install heading = %q", got)
	}
	if got := handlertest.Text(handlertest.MustTestid(t, doc, "agent-listed-from")); !strings.Contains(got, "the MCP Registry (io.github.a/files)") {
		t.Errorf("listed from = %q", got)
	}
	if handlertest.Testid(doc, "chat-agent").Length() != 0 {
		t.Error("a catalogue listing has a Chat button")
	}
	page, err := env.Store.SearchAgents(t.Context(), store.SearchQuery{Q: "files"})
	if err != nil || len(page.Listings) != 1 {
		t.Errorf("search: %d, %v", len(page.Listings), err)
	}
	// A hosted agent keeps its Chat button and shows no install line.
	w := env.SeedAgent("", handlertest.SimpleInput("weather-bot", "Weather Bot"))
	doc = env.Page("/agents/"+w.Record.ID, http.StatusOK)
	if handlertest.Testid(doc, "chat-agent").Length() != 1 || handlertest.Testid(doc, "agent-install").Length() != 0 {
		t.Error("a hosted agent's page changed")
	}
}
