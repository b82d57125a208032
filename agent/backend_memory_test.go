package agent

import (
	"errors"
	"testing"
)

// TestBackendMemoryAndHistory: memory and a history budget belong to llm
// backends, the budget within its bounds (0: the node's).
func TestBackendMemoryAndHistory(t *testing.T) {
	llm := Backend{Kind: BackendLLM, URL: "https://api.example.com/v1", Model: "m"}
	for _, tc := range []struct {
		name  string
		edit  func(*Backend)
		field string // "": valid
	}{
		{"memory on llm", func(b *Backend) { b.Memory = true }, ""},
		{"budget at the bounds", func(b *Backend) { b.HistoryTokens = MinHistoryTokens }, ""},
		{"budget at the top", func(b *Backend) { b.HistoryTokens = MaxHistoryTokens }, ""},
		{"budget too small", func(b *Backend) { b.HistoryTokens = MinHistoryTokens - 1 }, "backend.history_tokens"},
		{"budget not a number", func(b *Backend) { b.HistoryTokens = -1 }, "backend.history_tokens"},
		{"memory on a webhook", func(b *Backend) { *b = Backend{Kind: BackendWebhook, URL: "https://h.example.com", Memory: true} }, "backend.memory"},
		{"budget on a webhook", func(b *Backend) {
			*b = Backend{Kind: BackendWebhook, URL: "https://h.example.com", HistoryTokens: 1000}
		}, "backend.history_tokens"},
	} {
		b := llm
		tc.edit(&b)
		err := b.Validate()
		var ve *ValidationError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ve) || ve.Fields[tc.field] == ""):
			t.Errorf("%s: %v, want an error on %s", tc.name, err, tc.field)
		}
	}
}
