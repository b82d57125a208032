package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

const testAPIKey = "sk-test-7f3a9c1e5b2d4f6a8c0e"

func TestBackendValidate(t *testing.T) {
	llm := Backend{Kind: BackendLLM, URL: "https://api.openai.com/v1", Model: "gpt-4o-mini", SystemPrompt: "You are helpful.\nBe brief.", APIKey: testAPIKey}
	mcp := Backend{Kind: BackendMCP, URL: "https://tools.example.com/mcp", Tool: "search"}
	hook := Backend{Kind: BackendWebhook, URL: "https://hooks.example.com/agent"}
	a2a := Backend{Kind: BackendA2A, URL: "https://agents.example.com/.well-known/agent-card.json"}
	with := func(b Backend, f func(*Backend)) Backend { f(&b); return b }

	valid := map[string]Backend{
		"builtin echo":        {Kind: BackendBuiltin, Builtin: "echo"},
		"builtin calculator":  {Kind: BackendBuiltin, Builtin: "calculator"},
		"llm":                 llm,
		"llm without key":     with(llm, func(b *Backend) { b.APIKey = "" }),
		"llm local http":      with(llm, func(b *Backend) { b.URL = "http://localhost:11434/v1" }), // syntax only; SSRF is CheckHost's job
		"llm own concurrency": with(llm, func(b *Backend) { b.Concurrency = 64 }),
		"mcp":                 mcp,
		"webhook":             hook,
		"a2a":                 a2a,
		"a2a with key":        with(a2a, func(b *Backend) { b.APIKey = testAPIKey }),
		"a2a with signer":     with(a2a, func(b *Backend) { b.CardSigner = "12D3KooWKfu3wQ3XqXcUK7QbxdQ2VVv6UfFsRQrAHDgQJdqGNYAs" }),
		"a2a http localhost":  with(a2a, func(b *Backend) { b.URL = "http://localhost:9001/.well-known/agent-card.json" }),
		"a2a http loopback":   with(a2a, func(b *Backend) { b.URL = "http://127.0.0.1:9001/card.json" }),
		"a2a http ipv6":       with(a2a, func(b *Backend) { b.URL = "http://[::1]:9001/card.json" }),
		"a2a http private":    with(a2a, func(b *Backend) { b.URL = "http://10.1.2.3/card.json" }),
		"a2a http internal":   with(a2a, func(b *Backend) { b.URL = "http://agents.corp.internal/card.json" }),
	}
	for name, b := range valid {
		if err := b.Validate(); err != nil {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}

	invalid := []struct {
		name  string
		b     Backend
		field string
	}{
		{"no kind", Backend{}, "backend.kind"},
		{"unknown kind", Backend{Kind: "shell"}, "backend.kind"},
		{"kind upper case", Backend{Kind: "LLM"}, "backend.kind"},
		{"builtin unknown", Backend{Kind: BackendBuiltin, Builtin: "shell"}, "backend.builtin"},
		{"builtin empty", Backend{Kind: BackendBuiltin}, "backend.builtin"},
		{"llm no url", with(llm, func(b *Backend) { b.URL = "" }), "backend.url"},
		{"llm bad url", with(llm, func(b *Backend) { b.URL = "file:///etc/passwd" }), "backend.url"},
		{"llm no model", with(llm, func(b *Backend) { b.Model = " " }), "backend.model"},
		{"llm model multi-line", with(llm, func(b *Backend) { b.Model = "gpt\n4" }), "backend.model"},
		{"llm model too long", with(llm, func(b *Backend) { b.Model = strings.Repeat("m", 201) }), "backend.model"},
		{"llm system prompt too long", with(llm, func(b *Backend) { b.SystemPrompt = strings.Repeat("p", 8<<10+1) }), "backend.system_prompt"},
		{"llm system prompt control", with(llm, func(b *Backend) { b.SystemPrompt = "a\x00" }), "backend.system_prompt"},
		{"llm api key newline", with(llm, func(b *Backend) { b.APIKey = testAPIKey + "\n" }), "backend.api_key"},
		{"llm api key too long", with(llm, func(b *Backend) { b.APIKey = strings.Repeat("k", 1025) }), "backend.api_key"},
		{"llm concurrency negative", with(llm, func(b *Backend) { b.Concurrency = -1 }), "backend.concurrency"},
		{"llm concurrency too high", with(llm, func(b *Backend) { b.Concurrency = 65 }), "backend.concurrency"},
		{"webhook with concurrency", with(hook, func(b *Backend) { b.Concurrency = 2 }), "backend.concurrency"},
		{"mcp no url", with(mcp, func(b *Backend) { b.URL = "" }), "backend.url"},
		{"mcp no tool", with(mcp, func(b *Backend) { b.Tool = "" }), "backend.tool"},
		{"mcp tool multi-line", with(mcp, func(b *Backend) { b.Tool = "a\nb" }), "backend.tool"},
		{"webhook no url", Backend{Kind: BackendWebhook}, "backend.url"},
		{"webhook credentials", with(hook, func(b *Backend) { b.URL = "https://u:p@hooks.example.com/" }), "backend.url"},
		{"webhook ftp", with(hook, func(b *Backend) { b.URL = "ftp://hooks.example.com/" }), "backend.url"},
		{"a2a no url", Backend{Kind: BackendA2A}, "backend.url"},
		{"a2a http public", with(a2a, func(b *Backend) { b.URL = "http://agents.example.com/card.json" }), "backend.url"},
		{"a2a http public ip", with(a2a, func(b *Backend) { b.URL = "http://93.184.216.34/card.json" }), "backend.url"},
		{"a2a ftp", with(a2a, func(b *Backend) { b.URL = "ftp://agents.example.com/card.json" }), "backend.url"},
		{"a2a with model", with(a2a, func(b *Backend) { b.Model = "gpt-4o" }), "backend.model"},
		{"a2a with a multi-line api key", with(a2a, func(b *Backend) { b.APIKey = "sk-one\nsk-two" }), "backend.api_key"},
		{"a2a with a bad card signer", with(a2a, func(b *Backend) { b.CardSigner = "node-x" }), "backend.card_signer"},
		{"a2a with system prompt", with(a2a, func(b *Backend) { b.SystemPrompt = "Be nice." }), "backend.system_prompt"},
		{"a2a with tool", with(a2a, func(b *Backend) { b.Tool = "ask" }), "backend.tool"},
		{"a2a with builtin", with(a2a, func(b *Backend) { b.Builtin = "echo" }), "backend.builtin"},
	}
	for _, c := range invalid {
		t.Run(c.name, func(t *testing.T) {
			err := c.b.Validate()
			if !errors.Is(err, ErrInvalidField) {
				t.Fatalf("Validate = %v, want ErrInvalidField", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[c.field] == "" {
				t.Fatalf("Validate = %v, want exactly field %q", err, c.field)
			}
			if strings.Contains(err.Error(), testAPIKey) {
				t.Fatalf("validation error leaks the api key: %v", err)
			}
		})
	}
}

func TestBackendNeverPrintsAPIKey(t *testing.T) {
	b := Backend{Kind: BackendLLM, URL: "https://api.openai.com/v1", Model: "gpt-4o-mini", APIKey: testAPIKey}
	outputs := map[string]string{
		"String": b.String(),
		"%v":     fmt.Sprintf("%v", b),
		"%+v":    fmt.Sprintf("%+v", b),
		"%s":     fmt.Sprintf("%s", b),
		"%#v":    fmt.Sprintf("%#v", b),
		"&%v":    fmt.Sprintf("%v", &b),
		"&%+v":   fmt.Sprintf("%+v", &b),
		"slice":  fmt.Sprint([]Backend{b}),
		"LogVal": b.LogValue().String(),
	}
	for name, out := range outputs {
		if strings.Contains(out, testAPIKey) {
			t.Errorf("%s leaks the api key: %s", name, out)
		}
		if !strings.Contains(out, "[redacted]") {
			t.Errorf("%s does not say a key is set: %s", name, out)
		}
	}
	if s := b.String(); !strings.Contains(s, "kind=llm") || !strings.Contains(s, "model=gpt-4o-mini") || !strings.Contains(s, "url=https://api.openai.com/v1") {
		t.Errorf("String() lost the non-secret fields: %s", s)
	}
	noKey := Backend{Kind: BackendBuiltin, Builtin: "echo"}
	if strings.Contains(noKey.String(), "[redacted]") {
		t.Errorf("String() of a backend without a key says redacted: %s", noKey)
	}
}

func TestBackendSlogNeverLogsAPIKey(t *testing.T) {
	b := Backend{Kind: BackendLLM, URL: "https://api.openai.com/v1", Model: "gpt-4o-mini", APIKey: testAPIKey}
	for name, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
		"json": func(w *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(w, nil) },
		"text": func(w *bytes.Buffer) slog.Handler { return slog.NewTextHandler(w, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(newHandler(&buf))
			log.Info("value", "backend", b)
			log.Info("pointer", "backend", &b)
			log.Info("attr", slog.Any("backend", b))
			log.With("backend", b).Info("with")
			log.WithGroup("agent").Info("group", "backend", b)
			log.Info("nested", slog.Group("agent", slog.Any("backend", b)))
			out := buf.String()
			if strings.Contains(out, testAPIKey) {
				t.Fatalf("log leaks the api key:\n%s", out)
			}
			if got := strings.Count(out, "[redacted]"); got != 6 {
				t.Fatalf("want 6 redacted backends, got %d:\n%s", got, out)
			}
			if name == "json" {
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					if !json.Valid([]byte(line)) {
						t.Fatalf("invalid JSON log line %s", line)
					}
				}
			}
		})
	}
}

func TestBackendRedacted(t *testing.T) {
	b := Backend{Kind: BackendLLM, URL: "https://api.openai.com/v1", Model: "gpt-4o-mini", SystemPrompt: "Be brief.", APIKey: testAPIKey, Tool: "t"}
	r := b.Redacted()
	if r.APIKey != "" {
		t.Fatalf("Redacted kept the key: %q", r.APIKey)
	}
	want := b
	want.APIKey = ""
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("Redacted changed other fields: %+v", r)
	}
	if b.APIKey != testAPIKey {
		t.Fatal("Redacted modified the original")
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), testAPIKey) || strings.Contains(string(out), "api_key") {
		t.Fatalf("redacted JSON carries the key: %s", out)
	}
	if !reflect.DeepEqual((Backend{Kind: BackendBuiltin, Builtin: "echo"}).Redacted(), Backend{Kind: BackendBuiltin, Builtin: "echo"}) {
		t.Fatal("Redacted changed a backend without a key")
	}
}
