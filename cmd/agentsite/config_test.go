package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigDefaultsEnvAndFlags(t *testing.T) {
	var c Config
	if err := c.Parse(nil, env(nil), io.Discard); err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "./data" || c.HTTPAddr != "127.0.0.1:8080" || !c.DemoAgents || c.DatabaseURL != "" ||
		c.RecordTTL != time.Hour || len(c.P2PListen) != 2 || c.AllowPrivateEndpoints || !c.SecureCookies ||
		c.StoreTimeout != 5*time.Second || c.LLMConcurrency != 4 || c.LLMQueue != 64 {
		t.Fatalf("defaults = %+v", c)
	}

	c = Config{}
	err := c.Parse([]string{"--http-addr", "127.0.0.1:9999", "--bootstrap", "/ip4/127.0.0.1/tcp/1/p2p/x"}, env(map[string]string{
		"AGENTSITE_HTTP_ADDR":     "127.0.0.1:7777", // the flag wins
		"AGENTSITE_DATA_DIR":      "/tmp/node-a",
		"AGENTSITE_DEMO_AGENTS":   "false",
		"AGENTSITE_P2P_LISTEN":    "/ip4/127.0.0.1/tcp/0, /ip4/127.0.0.1/udp/0/quic-v1",
		"AGENTSITE_RECORD_TTL":    "10m",
		"AGENTSITE_DATABASE_URL":  "postgres://postgres@127.0.0.1/x",
		"AGENTSITE_PUBLIC_URL":    "https://agents.example.org/",
		"AGENTSITE_STORE_TIMEOUT": "2s",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:9999" || c.DataDir != "/tmp/node-a" || c.DemoAgents || c.RecordTTL != 10*time.Minute ||
		len(c.P2PListen) != 2 || c.P2PListen[1] != "/ip4/127.0.0.1/udp/0/quic-v1" || len(c.Bootstrap) != 1 ||
		c.DatabaseURL != "postgres://postgres@127.0.0.1/x" || c.PublicURL != "https://agents.example.org/" || c.StoreTimeout != 2*time.Second {
		t.Fatalf("parsed = %+v", c)
	}
}

func TestConfigErrorsSayHowToFix(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--http-addr", "8080"}, nil, "--http-addr"},
		{[]string{"--database-url", "mysql://x"}, nil, "postgres://"},
		{[]string{"--operator-token", "short"}, nil, "openssl rand"},
		{[]string{"--record-ttl", "1s"}, nil, "--record-ttl"},
		{[]string{"--log-level", "loud"}, nil, "--log-level"},
		{[]string{"--store-timeout", "1ms"}, nil, "--store-timeout"},
		{[]string{"--sync-serve-rate", "0"}, nil, "--sync-serve-rate"},
		{[]string{"--llm-concurrency", "0"}, nil, "--llm-concurrency must be between 1 and 64"},
		{nil, map[string]string{"AGENTSITE_LLM_QUEUE": "-1"}, "--llm-queue must be between 0"},
		{nil, map[string]string{"AGENTSITE_DEMO_AGENTS": "maybe"}, "AGENTSITE_DEMO_AGENTS"},
		{[]string{"stray"}, nil, "unexpected argument"},
		{[]string{"--public-url", "agents.example.org"}, nil, "--public-url"},
		{[]string{"--public-url", "ftp://agents.example.org"}, nil, "https://"},
		{[]string{"--public-url", "https://agents.example.org/portal"}, nil, "root"},
		{[]string{"--public-url", "https://user:pw@agents.example.org"}, nil, "password"},
		{nil, map[string]string{"AGENTSITE_PUBLIC_URL": "https://"}, "host"},
		// A duration without its unit gets an example, from a flag or its twin.
		{[]string{"--echo-delay", "5"}, nil, "use one like 30s, 5m or 1h"},
		{nil, map[string]string{"AGENTSITE_PROBE_INTERVAL": "soon"}, "use one like 30s, 5m or 1h"},
	}
	for _, tt := range tests {
		var c Config
		err := c.Parse(tt.args, env(tt.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%v, %v) = %v, want an error mentioning %q", tt.args, tt.env, err, tt.want)
		}
	}
}

// TestDurationFlagsGiveAnExample: the import and demo commands' duration
// flags say what a duration looks like too, and every help keeps the
// word "duration" as the argument of such a flag.
func TestDurationFlagsGiveAnExample(t *testing.T) {
	const want = "use one like 30s, 5m or 1h"
	if _, err := parseImport([]string{"--crawl-timeout", "10"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("import --crawl-timeout 10: %v", err)
	}
	if _, err := newDemo([]string{"--start-timeout", "60"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("demo --start-timeout 60: %v", err)
	}
	var help strings.Builder
	var c Config
	_ = c.Parse([]string{"--help"}, env(nil), &help)
	if !strings.Contains(help.String(), "-echo-delay duration") {
		t.Errorf("serve help lost the duration argument name:\n%s", help.String())
	}
}

func TestConfigNATFlags(t *testing.T) {
	var c Config
	if err := c.Parse(nil, env(nil), io.Discard); err != nil {
		t.Fatal(err)
	}
	if c.NATPortMap || !c.RelayService || len(c.Announce) != 0 || len(c.TestPublicCIDRs) != 0 {
		t.Fatalf("NAT defaults = portmap %v relay %v announce %v", c.NATPortMap, c.RelayService, c.Announce)
	}
	c = Config{}
	err := c.Parse([]string{"--announce", "/ip4/203.0.113.7/tcp/4001", "--announce", "/ip4/203.0.113.7/udp/4001/quic-v1", "--nat-portmap"},
		env(map[string]string{"AGENTSITE_RELAY_SERVICE": "false", "AGENTSITE_TEST_PUBLIC_CIDR": "198.51.100.0/24"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.NATPortMap || c.RelayService || len(c.Announce) != 2 || len(c.TestPublicCIDRs) != 1 {
		t.Fatalf("NAT config = portmap %v relay %v announce %v cidrs %v", c.NATPortMap, c.RelayService, c.Announce, c.TestPublicCIDRs)
	}
	for _, bad := range [][]string{{"--announce", "203.0.113.7:4001"}, {"--announce", "/ip4/203.0.113.7/tcp/4001/p2p/x"}, {"--test-public-cidr", "198.51.100.1"}} {
		c = Config{}
		err := c.Parse(bad, env(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: err = %v", bad, err)
		}
	}
}
