package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/connlimit"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/storeopen"
)

// Config is every setting of `agentsite serve`. Each flag has an
// AGENTSITE_<FLAG> environment twin (dashes become underscores); a flag given
// on the command line wins over the environment.
type Config struct {
	DataDir               string
	HTTPAddr              string
	P2PListen             []string
	Bootstrap             []string
	Announce              []string
	NATPortMap            bool
	RelayService          bool
	TestPublicCIDRs       []string
	DatabaseURL           string
	DemoAgents            bool
	EchoDelay             time.Duration
	ConformanceAgent      bool
	AllowPrivateEndpoints bool
	AllowEndpoints        []string
	AllowPushEndpoints    []string
	OperatorToken         string
	SecureCookies         bool
	RecordTTL             time.Duration
	HeartbeatInterval     time.Duration
	HeartbeatBudget       float64
	StaleAfter            time.Duration
	SyncOnConnect         bool
	SyncInterval          time.Duration
	ChatRateLimit         int
	MaxConnsPerIP         int
	MaxConns              int
	MaxSocketsPerIP       int
	AnonTurnsPerIP        int
	BodyTimeout           time.Duration
	WriteTimeout          time.Duration
	TrustedProxies        []string
	MetricsToken          string
	PublicURL             string
	NodeName              string
	StoreTimeout          time.Duration
	ProbeInterval         time.Duration
	UsesInterval          time.Duration
	ProbeBudget           int
	LLMConcurrency        int
	LLMQueue              int
	LLMHistoryTokens      int
	LogLevel              string
	LogFormat             string
	DebugAddr             string

	// The DHT values held for other peers (p2p.DHTStoreLimits).
	DHTStoreMiB         int
	DHTValuesPerPeer    int
	DHTValuesPerIPGroup int

	// What peers may pull from this node's catalogue (p2p.SyncServeLimits).
	SyncServeRate  int
	SyncServeBurst int

	// Admission of network listings (p2p.Admission).
	BlockPeers     []string
	TrustPeers     []string
	TrustedOnly    bool
	PublisherRate  int
	UnheardPerHour int

	// Listings of hosts and publishers never heard (store.Sink, store.Sweep).
	MaxPerPublisher int
	UnheardExpiry   time.Duration
	// The node's capacity in listings (store.Capacity); 0: no bound.
	MaxListings int
	// Verified publishers: --verify-* (verify.go).
	Verify verifyConfig
}

// DefaultP2PListen listens on every interface on a free TCP and QUIC port.
var defaultP2PListen = []string{"/ip4/0.0.0.0/tcp/0", "/ip4/0.0.0.0/udp/0/quic-v1"}

// Settings without a flag of their own: one value each, kept here with
// the flags' defaults.
const (
	// loginRateLimit is the login and sign-up attempts one client IP may
	// make per minute (registrations and API writes: six times that), and
	// the password attempts at one account from anywhere.
	loginRateLimit = 10
	// streamWriteTimeout is --write-timeout for the responses that run a
	// whole chat turn (/mcp, the message API, the no-JS chat form).
	streamWriteTimeout = 2 * time.Minute
	// importStoreTimeout is --store-timeout for an offline import: nobody
	// waits on a page, and a bulk write may queue behind a checkpoint.
	importStoreTimeout = 30 * time.Second
)

// stringList is a repeatable flag; from the environment it is comma-separated.
type stringList struct {
	vals    *[]string
	changed bool
}

func (s *stringList) String() string {
	if s.vals == nil {
		return ""
	}
	return strings.Join(*s.vals, ",")
}

func (s *stringList) Set(v string) error {
	if !s.changed {
		*s.vals = nil
		s.changed = true
	}
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s.vals = append(*s.vals, p)
		}
	}
	return nil
}

// EnvName is the environment twin of a flag.
func EnvName(flagName string) string {
	return "AGENTSITE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// newFlagSet declares the serve flags on c with their defaults.
func (c *Config) newFlagSet(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agentsite serve", flag.ContinueOnError)
	fs.SetOutput(out)
	c.P2PListen = append([]string(nil), defaultP2PListen...)
	c.declareShared(fs)
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:8080", "address of the portal, API and /mcp")
	fs.Var(&stringList{vals: &c.P2PListen}, "p2p-listen", "libp2p listen multiaddr (repeatable; default TCP and QUIC on a free port)")
	fs.Var(&stringList{vals: &c.Bootstrap}, "bootstrap", "multiaddr with /p2p/<id> of a peer to join through (repeatable)")
	fs.Var(&stringList{vals: &c.Announce}, "announce", "extra multiaddr to advertise, e.g. a port forwarded on the router: /ip4/203.0.113.7/tcp/4001 (repeatable)")
	fs.BoolVar(&c.NATPortMap, "nat-portmap", false, "ask the router to forward a port (UPnP, NAT-PMP)")
	fs.BoolVar(&c.RelayService, "relay-service", true, "offer a bounded circuit relay to nodes behind NAT while this node is publicly reachable")
	fs.Var(&stringList{vals: &c.TestPublicCIDRs}, "test-public-cidr", "tests only: count addresses in this CIDR (e.g. the documentation prefix 198.51.100.0/24) as public (repeatable)")
	fs.BoolVar(&c.DemoAgents, "demo-agents", true, "host the builtin demo agents (echo, calculator)")
	fs.BoolVar(&c.ConformanceAgent, "conformance-agent", false, "host the builtin conformance agent the A2A conformance kit tests against (make a2a-tck); off, there is no such agent")
	fs.DurationVar(&c.EchoDelay, "echo-delay", 0, "pause of the builtin echo agent before each word, so streaming shows (the demo and make run use 50ms)")
	fs.StringVar(&c.OperatorToken, "operator-token", "", "bearer token with operator rights on the API (empty: disabled)")
	fs.BoolVar(&c.SecureCookies, "secure-cookies", true, "mark session cookies Secure (browsers accept them on http://127.0.0.1 and localhost)")
	fs.DurationVar(&c.HeartbeatInterval, "heartbeat-interval", p2p.DefaultHeartbeatInterval, "how often this node announces itself on agentsite/status/1")
	fs.Float64Var(&c.HeartbeatBudget, "heartbeat-budget", 0, fmt.Sprintf("heartbeats a second each node should receive at most: the interval grows with the planet to hold it (0: %d per --heartbeat-interval)", p2p.DefaultHeartbeatsPerInterval))
	fs.DurationVar(&c.StaleAfter, "stale-after", 0, "silence after which a node's listings turn stale (0: 3 heartbeat intervals)")
	fs.BoolVar(&c.SyncOnConnect, "sync-on-connect", true, "pull each new peer's catalogue when it connects (off: the cache fills from gossip and look-ups only)")
	fs.DurationVar(&c.SyncInterval, "sync-interval", p2p.DefaultSyncInterval, "how often what changed in each connected peer's catalogue is pulled again, jittered ±25 % (repairs records lost in gossip; 0: "+p2p.DefaultSyncInterval.String()+")")
	fs.IntVar(&c.ChatRateLimit, "chat-rate-limit", 120, "chat turns per minute one IP or account may send (WebSocket, message API, MCP)")
	fs.IntVar(&c.MaxConnsPerIP, "max-conns-per-ip", 64, "HTTP connections one client IP (IPv6: its /64) may hold open; 0: no cap")
	fs.IntVar(&c.MaxConns, "max-conns", 0, "HTTP connections all clients together may hold open (0: half the open-file limit)")
	fs.IntVar(&c.MaxSocketsPerIP, "max-sockets-per-ip", 16, "chat WebSockets one client IP (IPv6: its /64) may hold open")
	fs.IntVar(&c.AnonTurnsPerIP, "anon-turns-per-ip", httpkit.DefaultAddressTurns, "anonymous chat turns in flight from one client IP (IPv6: its /64), all the visitors behind it together; each visitor's session has its own bound of 4")
	fs.DurationVar(&c.BodyTimeout, "body-timeout", 15*time.Second, "time a client may take to send a request body")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", 30*time.Second, "time a response may take to reach the client (chat turns: 2m)")
	fs.Var(&stringList{vals: &c.TrustedProxies}, "trusted-proxy", "CIDR of a reverse proxy in front of this node (repeatable): clients are read from its X-Forwarded-For, and it is exempt from --max-conns-per-ip")
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "bearer token /metrics wants (empty: /metrics is open)")
	fs.StringVar(&c.PublicURL, "public-url", "", "the node's public address behind a reverse proxy, e.g. https://agents.example.org (its host is accepted on /mcp; A2A card URLs use it; empty: the request's host)")
	fs.StringVar(&c.NodeName, "node-name", defaultNodeName(), "this node's name for people, sent in its signed heartbeats and shown on every page beside its peer ID's place: 1-32 of a-z, 0-9, '-' and '.' (default: the host name, sanitised; a label, not an identity)")
	fs.DurationVar(&c.StoreTimeout, "store-timeout", 5*time.Second, "deadline of every database call; past it the call fails and the request gets 503 with Retry-After")
	fs.DurationVar(&c.ProbeInterval, "probe-interval", registry.DefaultProbeInterval, "how often this node probes each of its agents' backends (jittered ±10%) for their health")
	fs.DurationVar(&c.UsesInterval, "uses-interval", 5*time.Minute, "how often this node counts the week's conversations of each of its agents, which its heartbeats carry (one grouped read of the conversations)")
	fs.IntVar(&c.ProbeBudget, "probe-budget", registry.DefaultProbeBudget, "the most backend probes this node makes in any minute; past it each agent is probed less often than --probe-interval, agents people use first")
	fs.IntVar(&c.LLMConcurrency, "llm-concurrency", 4, "completion requests this node's llm agents have in flight at one model endpoint (base URL) at once; the rest wait, callers taken in turn (an agent's owner may set its own, backend.concurrency)")
	fs.IntVar(&c.LLMQueue, "llm-queue", 64, "requests that may wait for one model endpoint; past it a turn is refused with 429 (busy: N waiting)")
	fs.IntVar(&c.LLMHistoryTokens, "llm-history-tokens", runtime.DefaultHistoryTokens, "the history an llm agent sends its model, in tokens of ~4 bytes; past it the oldest turns are folded into a summary (an agent's owner may set its own, backend.history_tokens)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "text or json")
	fs.StringVar(&c.DebugAddr, "debug-addr", "", "loopback address for net/http/pprof, e.g. 127.0.0.1:6060 (empty: off)")
	// The DHT values this node holds for other peers.
	fs.IntVar(&c.DHTStoreMiB, "dht-store-mib", p2p.DefaultDHTStoreBytes>>20, "MiB of DHT values this node holds for other peers; when full, the oldest go (0: the default)")
	fs.IntVar(&c.DHTValuesPerPeer, "dht-values-per-peer", p2p.DefaultDHTValuesPerPeer, "DHT values one peer may have stored here; more PUTs are refused")
	fs.IntVar(&c.DHTValuesPerIPGroup, "dht-values-per-ip-group", p2p.DefaultDHTValuesPerIPGroup, "DHT values the peers of one IP group (/24 of IPv4, /48 of IPv6) may have stored here together")
	// What one peer may pull from this node's catalogue (an IP group 4× as much).
	fs.IntVar(&c.SyncServeRate, "sync-serve-rate", p2p.DefaultSyncServeRate>>20, "MiB a second one peer may pull from this node's catalogue by sync once its burst is spent (an IP group 4x as much); past it its pages wait, then its streams end. An honest mirror's fill takes 1-2 MiB/s")
	fs.IntVar(&c.SyncServeBurst, "sync-serve-burst", p2p.DefaultSyncServeBurst>>20, "MiB one peer may pull from this node's catalogue by sync at once before --sync-serve-rate applies (an IP group 4x as much)")
	// Admission of network listings: who may place them here, how many.
	fs.Var(&stringList{vals: &c.BlockPeers}, "block-peer", "peer ID refused as a peer and as a publisher: no connection, its listings dropped (repeatable)")
	fs.Var(&stringList{vals: &c.TrustPeers}, "trust-peer", "peer ID exempt from the admission quotas, as publisher and relayer (repeatable)")
	fs.BoolVar(&c.TrustedOnly, "trusted-only", false, "keep only listings published by --trust-peer peers and this node")
	fs.IntVar(&c.PublisherRate, "publisher-rate", p2p.DefaultPublisherRate, "fresh records one publisher may bring by gossip per minute; the rest are ignored")
	fs.IntVar(&c.UnheardPerHour, "unheard-per-hour", p2p.DefaultUnheardPerHour, "listings of never-heard publishers one relaying peer may place here per hour (its IP group: twice that)")
	// What listings of hosts and publishers never heard may hold here.
	fs.IntVar(&c.MaxPerPublisher, "max-listings-per-publisher", store.DefaultMaxPerPublisher, "listings one publisher other than this node may hold here that are not offline while this node does not hear it; a publisher it hears starts there and doubles every 6 heartbeat intervals up to what its heartbeats say it hosts and --max-listings; a new one beyond it is refused (0: the default)")
	fs.IntVar(&c.MaxListings, "max-listings", store.DefaultMaxListings, "listings this node holds at most; at it a new one from the network evicts those of hosts never heard, then offline, then stale ones of hosts heard no longer than its own (never this node's own nor online ones), or is refused (0: no bound)")
	fs.DurationVar(&c.UnheardExpiry, "unheard-expiry", store.DefaultUnheardAfter, "listings whose host never sent a heartbeat go offline this long after they were last heard of (0: the default)")
	fs.Var(&stringList{vals: &c.AllowPushEndpoints}, "allow-push-endpoint", "an endpoint of your own network that A2A push notifications may reach (a webhook receiver you run, 127.0.0.1/32 for a local test kit); same forms as --allow-endpoint; without it push reaches public hosts only (repeatable)")
	c.declareVerify(fs)
	hintDurations(fs)
	return fs
}

// declareShared declares the flags `import` shares with `serve`, on the
// same fields, each with one default and one rule (validateShared): where
// the node's key and database are, and the registry's limits, so that an
// import registers exactly as the node would.
func (c *Config) declareShared(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", "./data", "directory for the node key and the embedded SQLite database")
	fs.StringVar(&c.DatabaseURL, "database-url", "", "postgres://... to use Postgres (or sqlite:PATH); empty for embedded SQLite in the data dir")
	fs.BoolVar(&c.AllowPrivateEndpoints, "allow-private-endpoints", false, "allow agent backends on every loopback/private address (the broad switch; prefer --allow-endpoint). Push callbacks (but --allow-push-endpoint), domain proofs and referrals never reach private addresses")
	fs.Var(&stringList{vals: &c.AllowEndpoints}, "allow-endpoint", "an endpoint of your own network that agent backends and imports may reach, and nothing else private: IP:port (127.0.0.1:11434, [::1]:8080, localhost:11434) or a CIDR for every port (10.1.2.0/24) (repeatable)")
	fs.DurationVar(&c.RecordTTL, "record-ttl", agent.DefaultTTL, "lifetime of the records this node signs; they are re-announced at half of it")
}

// defaultConfig is serve's configuration when no flag is given.
func defaultConfig() Config {
	var c Config
	_ = c.newFlagSet(io.Discard).Parse(nil)
	return c
}

// Parse fills c from args, then from the environment for flags not given.
func (c *Config) Parse(args []string, getenv func(string) string, out io.Writer) error {
	fs := c.newFlagSet(out)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; flags start with --", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		if v, ok := lookupEnv(getenv, EnvName(f.Name)); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.Validate()
}

func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

// validateShared checks the flags of declareShared.
func (c *Config) validateShared() []error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if _, err := storeopen.Engine(c.DatabaseURL); err != nil {
		errs = append(errs, errors.New("--database-url must start with postgres:// (or sqlite:PATH); leave it empty for embedded SQLite"))
	}
	if c.RecordTTL < 5*time.Second || c.RecordTTL > 24*time.Hour {
		errs = append(errs, errors.New("--record-ttl must be between 5s and 24h (docs/architecture.md default: 1h)"))
	}
	for _, e := range c.AllowEndpoints {
		if _, err := runtime.ParseAllowEntry(e); err != nil {
			errs = append(errs, fmt.Errorf("--allow-endpoint %w", err))
		}
	}
	for _, e := range c.AllowPushEndpoints {
		if _, err := runtime.ParseAllowEntry(e); err != nil {
			errs = append(errs, fmt.Errorf("--allow-push-endpoint %w", err))
		}
	}
	return errs
}

// outbound is the outbound policy of --allow-private-endpoints,
// --allow-endpoint and --allow-push-endpoint (validated: a bad entry was
// refused at start).
func (c *Config) outbound() runtime.Outbound {
	o := runtime.Outbound{AllowPrivate: c.AllowPrivateEndpoints}
	for _, e := range c.AllowEndpoints {
		entries, _ := runtime.ParseAllowEntry(e)
		o.Allow = append(o.Allow, entries...)
	}
	for _, e := range c.AllowPushEndpoints {
		entries, _ := runtime.ParseAllowEntry(e)
		o.AllowPush = append(o.AllowPush, entries...)
	}
	return o
}

// Validate checks the configuration and says how to fix what is wrong.
func (c *Config) Validate() error {
	errs := c.validateShared()
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		errs = append(errs, fmt.Errorf("--http-addr %q must be host:port, e.g. 127.0.0.1:8080", c.HTTPAddr))
	}
	if c.OperatorToken != "" && len(c.OperatorToken) < 16 {
		errs = append(errs, errors.New("--operator-token must be at least 16 characters; generate one with: openssl rand -hex 24"))
	}
	if c.MaxListings < 0 {
		errs = append(errs, errors.New("--max-listings must not be negative (0: no bound; default 1000000)"))
	}
	if c.MaxPerPublisher < 0 || c.UnheardExpiry < 0 {
		errs = append(errs, errors.New("--max-listings-per-publisher and --unheard-expiry must not be negative (0: the defaults, 10000 and 15m)"))
	}
	if c.HeartbeatInterval < 100*time.Millisecond || c.HeartbeatInterval > 10*time.Minute {
		errs = append(errs, fmt.Errorf("--heartbeat-interval must be between 100ms and 10m (default %s)", p2p.DefaultHeartbeatInterval))
	}
	if c.ChatRateLimit < 1 {
		errs = append(errs, errors.New("--chat-rate-limit must be at least 1 (turns per minute)"))
	}
	if c.MaxConnsPerIP < 0 || c.MaxConns < 0 {
		errs = append(errs, errors.New("--max-conns-per-ip and --max-conns must not be negative; 0 means the default"))
	}
	if c.AnonTurnsPerIP < 1 {
		errs = append(errs, errors.New("--anon-turns-per-ip must be at least 1"))
	}
	if c.MaxSocketsPerIP < 1 {
		errs = append(errs, errors.New("--max-sockets-per-ip must be at least 1"))
	}
	if c.BodyTimeout < time.Second || c.WriteTimeout < time.Second {
		errs = append(errs, errors.New("--body-timeout and --write-timeout must be at least 1s"))
	}
	for _, p := range c.TestPublicCIDRs {
		if _, err := netip.ParsePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("--test-public-cidr %q must be a CIDR such as 198.51.100.0/24", p))
		}
	}
	for _, a := range c.Announce {
		if !strings.HasPrefix(a, "/") || strings.Contains(a, "/p2p/") {
			errs = append(errs, fmt.Errorf("--announce %q must be a multiaddr without /p2p/<id>, e.g. /ip4/203.0.113.7/tcp/4001", a))
		}
	}
	for _, p := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("--trusted-proxy %q must be a CIDR such as 127.0.0.1/32 or 10.0.0.0/8", p))
		}
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		errs = append(errs, errors.New("--metrics-token must be at least 16 characters; generate one with: openssl rand -hex 24"))
	}
	if c.StoreTimeout < 50*time.Millisecond || c.StoreTimeout > 5*time.Minute {
		errs = append(errs, errors.New("--store-timeout must be between 50ms and 5m (default 5s)"))
	}
	if c.ProbeInterval < time.Second || c.ProbeInterval > time.Hour {
		errs = append(errs, fmt.Errorf("--probe-interval must be between 1s and 1h (default %s)", registry.DefaultProbeInterval))
	}
	if c.UsesInterval < time.Second || c.UsesInterval > 24*time.Hour {
		errs = append(errs, errors.New("--uses-interval must be between 1s and 24h (default 5m)"))
	}
	if c.ProbeBudget < 1 || c.ProbeBudget > 100000 {
		errs = append(errs, fmt.Errorf("--probe-budget must be between 1 and 100000 probes a minute (default %d)", registry.DefaultProbeBudget))
	}
	if c.LLMConcurrency < 1 || c.LLMConcurrency > agent.MaxLLMConcurrency {
		errs = append(errs, fmt.Errorf("--llm-concurrency must be between 1 and %d requests at one model endpoint (default 4)", agent.MaxLLMConcurrency))
	}
	if c.LLMHistoryTokens < agent.MinHistoryTokens || c.LLMHistoryTokens > agent.MaxHistoryTokens {
		errs = append(errs, fmt.Errorf("--llm-history-tokens must be between %d and %d tokens (default %d)", agent.MinHistoryTokens, agent.MaxHistoryTokens, runtime.DefaultHistoryTokens))
	}
	if c.LLMQueue < 0 || c.LLMQueue > 10000 {
		errs = append(errs, errors.New("--llm-queue must be between 0 and 10000 waiting requests per model endpoint (default 64)"))
	}
	if c.HeartbeatBudget < 0 {
		errs = append(errs, fmt.Errorf("--heartbeat-budget must not be negative; 0 means %d per --heartbeat-interval", p2p.DefaultHeartbeatsPerInterval))
	}
	if c.StaleAfter < 0 {
		errs = append(errs, errors.New("--stale-after must not be negative; 0 means 3 heartbeat intervals"))
	}
	if err := agent.CheckNodeName(c.NodeName); err != nil {
		errs = append(errs, fmt.Errorf("--node-name %q: %w; e.g. --node-name=office-1", c.NodeName, err))
	}
	if c.PublicURL != "" {
		if _, err := handlers.ParsePublicURL(c.PublicURL); err != nil {
			errs = append(errs, fmt.Errorf("--public-url %q %w; e.g. https://agents.example.org", c.PublicURL, err))
		}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.DebugAddr != "" && !loopbackAddr(c.DebugAddr) {
		errs = append(errs, fmt.Errorf("--debug-addr %q must be a loopback host:port such as 127.0.0.1:6060 (profiles are not for the public)", c.DebugAddr))
	}
	for _, l := range []struct {
		flag string
		ids  []string
	}{{"block-peer", c.BlockPeers}, {"trust-peer", c.TrustPeers}} {
		if err := p2p.ParsePeerIDs(l.flag, l.ids); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TrustedOnly && len(c.TrustPeers) == 0 && len(c.Verify.TrustDomains) == 0 {
		errs = append(errs, errors.New("--trusted-only needs at least one --trust-peer or --trust-domain (else only this node's own listings are kept)"))
	}
	if c.PublisherRate < 1 || c.UnheardPerHour < 1 {
		errs = append(errs, errors.New("--publisher-rate and --unheard-per-hour must be at least 1"))
	}
	if c.DHTStoreMiB < 0 || c.DHTValuesPerPeer < 0 || c.DHTValuesPerIPGroup < 0 {
		errs = append(errs, fmt.Errorf("--dht-store-mib, --dht-values-per-peer and --dht-values-per-ip-group must not be negative (0: the defaults, %d, %d and %d)",
			p2p.DefaultDHTStoreBytes>>20, p2p.DefaultDHTValuesPerPeer, p2p.DefaultDHTValuesPerIPGroup))
	}
	if c.SyncServeRate < 1 || c.SyncServeBurst < 1 {
		errs = append(errs, errors.New("--sync-serve-rate and --sync-serve-burst must be at least 1 (MiB/s and MiB; the defaults are 4 and 16)"))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, errors.New("--log-format must be text or json"))
	}
	errs = append(errs, c.validateVerify()...)
	return errors.Join(errs...)
}

// quotaDoubling is how long a heard publisher's quota takes to double
// (store.Sink.QuotaDoubling): 6 heartbeat intervals, so that by the last
// of the syncs p2p tries again over a quota (3, 6 and 9 intervals apart:
// 18 in all) it has doubled three times, at any --heartbeat-interval.
func (c *Config) quotaDoubling() time.Duration {
	return 6 * c.HeartbeatInterval
}

// staleAfter is the silence after which a node's listings turn stale.
func (c *Config) staleAfter() time.Duration {
	if c.StaleAfter > 0 {
		return c.StaleAfter
	}
	return 3 * c.HeartbeatInterval
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q must be debug, info, warn or error", s)
	}
	return l, nil
}

func (c *Config) newLogger(w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// connLimits are the HTTP listener's caps. The process cap defaults to
// half the open-file limit: the rest is for libp2p, the store and files, so
// accept never fails with "too many open files".
func (c *Config) connLimits() connlimit.Limits {
	total := c.MaxConns
	if total == 0 {
		total = 1024
		var rl syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 {
			total = int(min(rl.Cur/2, 1<<20))
		}
	}
	var exempt []netip.Prefix
	for _, p := range c.TrustedProxies {
		if pre, err := netip.ParsePrefix(p); err == nil {
			exempt = append(exempt, pre.Masked())
		}
	}
	return connlimit.Limits{PerClient: c.MaxConnsPerIP, Total: total, Refusing: max(total/8, 16), Exempt: exempt}
}

// loopbackAddr reports whether addr is host:port on a loopback address
// (or localhost).
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// httpConfig is the HTTP settings of the flags. The surfaces' services
// and the store's state come from the app (Main.buildHTTP).
func (c *Config) httpConfig() handlers.Config {
	return handlers.Config{
		Version:             buildVersion(),
		OperatorToken:       c.OperatorToken,
		SecureCookies:       c.SecureCookies,
		RateLimit:           loginRateLimit,
		ChatRateLimit:       c.ChatRateLimit,
		BodyTimeout:         c.BodyTimeout,
		WriteTimeout:        c.WriteTimeout,
		StreamWriteTimeout:  streamWriteTimeout,
		MaxSocketsPerClient: c.MaxSocketsPerIP,
		AnonTurnsPerAddress: c.AnonTurnsPerIP,
		TrustedProxies:      c.TrustedProxies,
		MetricsToken:        c.MetricsToken,
		PublicURL:           c.PublicURL,
		NodeName:            c.NodeName,
		// Referrals wait for a node heard through two silences that
		// would have made it stale: a fresh identity is not referred.
		ReferAfter: 2 * c.staleAfter(),
	}
}

// defaultNodeName is --node-name's default: the host name, sanitised to a
// short label ("" when it has nothing usable: the node is then shown by
// its peer ID).
func defaultNodeName() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return agent.SanitizeNodeName(h)
}

// p2pConfig is the network settings of the flags; the app adds what it
// builds (the cache, the metrics, the health source).
func (c *Config) p2pConfig() p2p.Config {
	return p2p.Config{
		ListenAddrs:       c.P2PListen,
		Bootstrap:         c.Bootstrap,
		Announce:          c.announced(),
		NATPortMap:        c.NATPortMap,
		NoRelayService:    !c.RelayService,
		UserAgent:         "agentsite/" + buildVersion(),
		Version:           buildVersion(),
		NodeName:          c.NodeName,
		HeartbeatInterval: c.HeartbeatInterval,
		HeartbeatBudget:   c.HeartbeatBudget,
		NoSyncOnConnect:   !c.SyncOnConnect,
		SyncInterval:      c.SyncInterval,
		Admission:         c.admission(),
		DHTStore:          c.dhtStore(),
		SyncServe:         p2p.SyncServeLimits{BytesPerSecond: c.SyncServeRate << 20, Burst: c.SyncServeBurst << 20},
	}
}

// admission is the p2p admission policy from the flags.
func (c *Config) admission() p2p.Admission {
	return p2p.Admission{
		Block: c.BlockPeers, Trust: c.TrustPeers, TrustedOnly: c.TrustedOnly, TrustDomains: c.Verify.trustDomains(),
		PublisherPerMinute: c.PublisherRate, UnheardPerHour: c.UnheardPerHour,
	}
}

// dhtStore is the bound on the DHT values held for other peers. They are
// kept at most as long as this node's records live (at least 1 h): hosts
// re-announce at half their TTL.
func (c *Config) dhtStore() p2p.DHTStoreLimits {
	return p2p.DHTStoreLimits{
		MaxBytes: int64(c.DHTStoreMiB) << 20, PerPeer: c.DHTValuesPerPeer, PerIPGroup: c.DHTValuesPerIPGroup,
		MaxAge: max(time.Hour, c.RecordTTL),
	}
}

// durationHint is a duration flag whose refusal shows what a duration
// looks like: the flag package alone says only "parse error".
type durationHint struct{ v flag.Value }

func (d *durationHint) String() string {
	if d == nil || d.v == nil {
		return time.Duration(0).String()
	}
	return d.v.String()
}

func (d *durationHint) Set(s string) error {
	if err := d.v.Set(s); err != nil {
		return errors.New("not a duration: use one like 30s, 5m or 1h")
	}
	return nil
}

func (d *durationHint) Get() any { return d.v.(flag.Getter).Get() }

// hintDurations gives every duration flag of fs that refusal, and its
// help the same example (the backquoted word keeps "duration" as the
// flag's argument name in the help); call it once the flags are declared.
func hintDurations(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				f.Value = &durationHint{v: f.Value}
				f.Usage += " (a `duration` like 30s, 5m or 1h)"
			}
		}
	})
}
