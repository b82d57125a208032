package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const testToolSecret = "tool-secret-4b1d9e"

// TestBackendToolsValidate: each bad entry gets an error keyed to it that
// says what to give instead; good ones pass.
func TestBackendToolsValidate(t *testing.T) {
	id := strings.Repeat("a", IDLen)
	llm := func(tools ...ToolServer) Backend {
		return Backend{Kind: BackendLLM, URL: "https://api.example.com/v1", Model: "m", Tools: tools}
	}
	cases := []struct {
		name  string
		b     Backend
		field string // "" valid
	}{
		{"url", llm(ToolServer{URL: "https://tools.example.com/mcp"}), ""},
		{"url with secret", llm(ToolServer{URL: "https://tools.example.com/mcp", Header: "X-Api-Key", Secret: "s"}), ""},
		{"agent", llm(ToolServer{Agent: id}), ""},
		{"both", llm(ToolServer{URL: "https://tools.example.com/mcp", Agent: id}), "backend.tools[0]"},
		{"neither", llm(ToolServer{}), "backend.tools[0]"},
		{"bad url", llm(ToolServer{URL: "ftp://x"}), "backend.tools[0].url"},
		{"bad agent", llm(ToolServer{Agent: "nope"}), "backend.tools[0].agent"},
		{"agent with secret", llm(ToolServer{Agent: id, Secret: "s"}), "backend.tools[0].secret"},
		{"duplicate", llm(ToolServer{URL: "https://t.example.com/mcp"}, ToolServer{URL: "https://t.example.com/mcp"}), "backend.tools[1].url"},
		{"bad header", llm(ToolServer{URL: "https://t.example.com/mcp", Header: "X Key", Secret: "s"}), "backend.tools[0].header"},
		{"reserved header", llm(ToolServer{URL: "https://t.example.com/mcp", Header: "mcp-session-id", Secret: "s"}), "backend.tools[0].header"},
		{"header without secret", llm(ToolServer{URL: "https://t.example.com/mcp", Header: "X-Key"}), "backend.tools[0].secret"},
		{"secret on two lines", llm(ToolServer{URL: "https://t.example.com/mcp", Secret: "a\nb"}), "backend.tools[0].secret"},
		{"too many", llm(make([]ToolServer, MaxToolServers+1)...), "backend.tools"},
		{"allow", llm(ToolServer{URL: "https://t.example.com/mcp", Allow: []string{"save_note", "list_notes"}}), ""},
		{"allow all", llm(ToolServer{Agent: id, Allow: []string{AllowAll}}), ""},
		{"allow blank", llm(ToolServer{URL: "https://t.example.com/mcp", Allow: []string{""}}), "backend.tools[0].allow"},
		{"allow two in one", llm(ToolServer{URL: "https://t.example.com/mcp", Allow: []string{"a, b"}}), "backend.tools[0].allow"},
		{"allow twice", llm(ToolServer{URL: "https://t.example.com/mcp", Allow: []string{"a", "a"}}), "backend.tools[0].allow"},
		{"not llm", Backend{Kind: BackendWebhook, URL: "https://h.example.com", Tools: []ToolServer{{URL: "https://t.example.com/mcp"}}}, "backend.tools"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.b.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Fields[c.field] == "" {
				t.Fatalf("Validate = %v, want an error on %s", err, c.field)
			}
		})
	}
}

// TestBackendToolsSecretHidden: a tool server's secret never shows in
// Redacted's JSON, %v, %+v, %#v or a structured log line.
func TestBackendToolsSecretHidden(t *testing.T) {
	b := Backend{Kind: BackendLLM, URL: "https://api.example.com/v1", Model: "m",
		Tools: []ToolServer{{URL: "https://tools.example.com/mcp", Header: "X-Api-Key", Secret: testToolSecret}}}
	out, _ := json.Marshal(b.Redacted())
	if strings.Contains(string(out), testToolSecret) || !strings.Contains(string(out), "tools.example.com") {
		t.Fatalf("redacted JSON = %s", out)
	}
	if b.Tools[0].Secret != testToolSecret {
		t.Fatal("Redacted modified the original")
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "backend", b)
	for _, s := range []string{fmt.Sprintf("%v", b), fmt.Sprintf("%+v", b), fmt.Sprintf("%#v", b), buf.String()} {
		if strings.Contains(s, testToolSecret) {
			t.Fatalf("secret leaked: %s", s)
		}
	}
	if got := b.Secrets(); len(got) != 1 || got[0] != testToolSecret {
		t.Fatalf("Secrets = %v", got)
	}
}

// TestKeepToolSecrets: a blank secret keeps the stored one for the same
// server; a typed one wins; another server gets none.
func TestKeepToolSecrets(t *testing.T) {
	old := []ToolServer{{URL: "https://a.example.com/mcp", Header: "X-Key", Secret: "old"}}
	got := KeepToolSecrets([]ToolServer{{URL: "https://a.example.com/mcp"}, {URL: "https://b.example.com/mcp"}}, old)
	if got[0].Secret != "old" || got[0].Header != "X-Key" || got[1].Secret != "" {
		t.Fatalf("KeepToolSecrets = %v", got)
	}
	if got := KeepToolSecrets([]ToolServer{{URL: "https://a.example.com/mcp", Secret: "new"}}, old); got[0].Secret != "new" {
		t.Fatalf("typed secret lost: %v", got)
	}
}

// TestToolHeaderValue: a bare token for Authorization goes as a bearer
// token; anything else goes as given.
func TestToolHeaderValue(t *testing.T) {
	for _, c := range []struct {
		t          ToolServer
		name, want string
	}{
		{ToolServer{Secret: "tok"}, "Authorization", "Bearer tok"},
		{ToolServer{Secret: "Basic abc"}, "Authorization", "Basic abc"},
		{ToolServer{Header: "x-api-key", Secret: "tok"}, "X-Api-Key", "tok"},
	} {
		if c.t.HeaderName() != c.name || c.t.HeaderValue() != c.want {
			t.Errorf("%+v: %s: %s, want %s: %s", c.t, c.t.HeaderName(), c.t.HeaderValue(), c.name, c.want)
		}
	}
}
