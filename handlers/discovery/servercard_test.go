package discovery_test

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentsite/agentsite/handlers/discovery"
	"github.com/agentsite/agentsite/handlers/handlertest"
)

// cardSchema is the MCP server card schema vendored from
// modelcontextprotocol/experimental-ext-server-card (testdata/mcp-server-card).
func cardSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../../testdata/mcp-server-card/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("server-card.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("server-card.schema.json#/$defs/ServerCard")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validCard(t *testing.T, s *jsonschema.Schema, what string, raw []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("%s does not fit the server card schema: %v\n%s", what, err, raw)
	}
}

// The node's server card and a local agent's (one with a long
// description, one with none) fit the server card schema, $schema
// included; the schema refuses a card without $schema, so the check can
// fail.
func TestServerCardsFitTheirSchema(t *testing.T) {
	s := cardSchema(t)
	bad, err := os.ReadFile("../../testdata/mcp-server-card/invalid-missing-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
	if s.Validate(inst) == nil {
		t.Fatal("the schema admits a card without $schema")
	}

	env := handlertest.New(t)
	long := handlertest.SimpleInput("long-bot", "Long Bot", "demo")
	long.Description = strings.Repeat("a long description ", 20)
	quiet := handlertest.SimpleInput("quiet-bot", "Quiet Bot", "demo")
	quiet.Description = ""
	paths := []string{"/mcp/server-card", discovery.LegacyServerCardPath}
	for _, in := range []string{"long", "quiet"} {
		i := long
		if in == "quiet" {
			i = quiet
		}
		paths = append(paths, "/mcp/agents/"+env.SeedAgent("", i).Record.ID+"/server-card")
	}
	for _, path := range paths {
		resp := env.Do(http.MethodGet, path, nil)
		handlertest.WantStatus(t, resp, http.StatusOK)
		raw := body(t, resp)
		validCard(t, s, path, raw)
		if !bytes.Contains(raw, []byte(`"$schema": "`+discovery.ServerCardSchema+`"`)) {
			t.Errorf("%s: no $schema: %s", path, raw)
		}
	}
}
