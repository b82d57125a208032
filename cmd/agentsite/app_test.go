package main

import (
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/registry"
)

// TestServeAndImportBuildTheSameRegistry: from the same flags, or their
// environment twins, `serve` and an offline `import` build the same
// registry: the same node (key), the same records' lifetime, the same rule
// on private backends. Only the services differ: serve's registry works on
// the cached store and finds records on the network, import's on the bare
// engine and the cache alone.
func TestServeAndImportBuildTheSameRegistry(t *testing.T) {
	for _, tc := range []struct {
		name         string
		flags        []string
		env          map[string]string
		ttl          time.Duration
		allowPrivate bool
	}{
		{name: "defaults", ttl: time.Hour},
		{name: "flags", flags: []string{"--record-ttl", "2h", "--allow-private-endpoints"}, ttl: 2 * time.Hour, allowPrivate: true},
		{name: "environment", env: map[string]string{EnvName("record-ttl"): "90m", EnvName("allow-private-endpoints"): "true"},
			ttl: 90 * time.Minute, allowPrivate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			getenv := func(name string) string { return tc.env[name] }

			ic, err := parseImport(append(append([]string{"--data-dir", dir}, tc.flags...), "agents.jsonl"), getenv, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			a, err := buildApp(t.Context(), ic.Serve, appDeps{Logger: slog.New(slog.DiscardHandler), Offline: true})
			if err != nil {
				t.Fatal(err)
			}
			imported := *a.registry
			importedID, err := imported.Publisher.AgentID("echo")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.close(); err != nil {
				t.Fatal(err)
			}
			if imported.Network != nil || imported.Schedule != nil {
				t.Errorf("the offline registry has a network (%v) or a prober (%v)", imported.Network, imported.Schedule)
			}

			m := NewMain()
			m.LogOutput = io.Discard
			args := append([]string{"--data-dir", dir, "--http-addr", "127.0.0.1:0", "--p2p-listen", "/ip4/127.0.0.1/tcp/0",
				"--demo-agents=false"}, tc.flags...)
			if err := m.ParseFlags(args, getenv, io.Discard); err != nil {
				t.Fatal(err)
			}
			if err := m.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			served := *m.Server.Registry
			servedID, err := served.Publisher.AgentID("echo")
			if err != nil {
				t.Fatal(err)
			}

			if served.TTL != tc.ttl || served.AllowPrivate != tc.allowPrivate {
				t.Errorf("serve's registry: TTL %s, private backends %v; want %s, %v", served.TTL, served.AllowPrivate, tc.ttl, tc.allowPrivate)
			}
			// Every setting of the registry, including any added later;
			// not the services it is given.
			services := map[string]bool{"Store": true, "Publisher": true, "Network": true, "Schedule": true, "Logger": true, "Now": true}
			for _, f := range reflect.VisibleFields(reflect.TypeFor[registry.Registry]()) {
				if services[f.Name] {
					continue
				}
				s, i := reflect.ValueOf(served).FieldByIndex(f.Index), reflect.ValueOf(imported).FieldByIndex(f.Index)
				if !reflect.DeepEqual(s.Interface(), i.Interface()) {
					t.Errorf("registry %s: serve %v, import %v", f.Name, s, i)
				}
			}
			if servedID != importedID || served.PeerID != m.Node.PeerID() {
				t.Errorf("agent id: serve %s, import %s; peer %s, node %s", servedID, importedID, served.PeerID, m.Node.PeerID())
			}
		})
	}
}
