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
		c.StoreTimeout != 5*time.Second {
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
		{nil, map[string]string{"AGENTSITE_DEMO_AGENTS": "maybe"}, "AGENTSITE_DEMO_AGENTS"},
		{[]string{"stray"}, nil, "unexpected argument"},
		{[]string{"--public-url", "agents.example.org"}, nil, "--public-url"},
		{[]string{"--public-url", "ftp://agents.example.org"}, nil, "https://"},
		{[]string{"--public-url", "https://agents.example.org/portal"}, nil, "root"},
		{[]string{"--public-url", "https://user:pw@agents.example.org"}, nil, "password"},
		{nil, map[string]string{"AGENTSITE_PUBLIC_URL": "https://"}, "host"},
	}
	for _, tt := range tests {
		var c Config
		err := c.Parse(tt.args, env(tt.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%v, %v) = %v, want an error mentioning %q", tt.args, tt.env, err, tt.want)
		}
	}
}
