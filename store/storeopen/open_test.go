package storeopen_test

import (
	"errors"
	"testing"

	"github.com/agentsite/agentsite/store/storeopen"
)

// TestEngine: the schemes the config accepts at start are those Open
// opens, and each names its engine.
func TestEngine(t *testing.T) {
	for url, want := range map[string]string{
		"":                               storeopen.EngineSQLite,
		"sqlite:/var/lib/agentsite.db":   storeopen.EngineSQLite,
		"sqlite:///var/lib/agentsite.db": storeopen.EngineSQLite,
		"postgres://u@h/db":              storeopen.EnginePostgres,
		"postgresql://u@h/db":            storeopen.EnginePostgres,
	} {
		got, err := storeopen.Engine(url)
		if err != nil || got != want {
			t.Errorf("Engine(%q) = %q, %v; want %q", url, got, err, want)
		}
	}
	for _, url := range []string{"mysql://u@h/db", "file:x.db", "/var/lib/agentsite.db", "Postgres://u@h/db"} {
		if got, err := storeopen.Engine(url); !errors.Is(err, storeopen.ErrScheme) {
			t.Errorf("Engine(%q) = %q, %v; want ErrScheme", url, got, err)
		}
		if _, _, err := storeopen.Open(t.Context(), url, t.TempDir(), nil); !errors.Is(err, storeopen.ErrScheme) {
			t.Errorf("Open(%q): %v; want ErrScheme", url, err)
		}
	}
}
