package agent

import (
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
)

// Backend kinds.
const (
	BackendBuiltin = "builtin"
	BackendLLM     = "llm"
	BackendMCP     = "mcp"
	BackendWebhook = "webhook"
	// BackendA2A is a remote A2A agent, registered by its agent card's URL.
	BackendA2A = "a2a"
	// BackendCatalogue is a listing only: a server its users run
	// themselves (an MCP Registry server with packages and no remote). The
	// node never answers for it; its record's origin says how to install
	// it, so people searching the hub learn that it exists.
	BackendCatalogue = "catalogue"
)

// MaxLLMConcurrency bounds an llm backend's own Concurrency: more than a
// model server takes at once is no limit at all.
const MaxLLMConcurrency = 64

// Bounds of an llm backend's own HistoryTokens: below the lower one a
// summary would leave no room for the turns it keeps.
const (
	MinHistoryTokens = 500
	MaxHistoryTokens = 1 << 20
)

// Builtins are the dependency-free agents every node can host.
var Builtins = []string{"echo", "calculator", "haiku"}

// BuiltinConformance is the builtin agent the A2A conformance kit tests a
// node against. It is not offered among Builtins: it answers only on a
// node started with --conformance-agent, which publishes it.
const BuiltinConformance = "conformance"

// Backend is how this node answers a local agent. It is local configuration,
// never part of the public Record; APIKey is a secret: stored server-side,
// never rendered back, never logged.
type Backend struct {
	Kind         string `json:"kind"`
	Builtin      string `json:"builtin,omitempty"`
	URL          string `json:"url,omitempty"`
	Model        string `json:"model,omitempty"`
	SystemPrompt string `json:"system_prompt,omitempty"`
	APIKey       string `json:"api_key,omitempty"`
	Tool         string `json:"tool,omitempty"`
	// Delegate lets an llm agent call other agents (find_agents and
	// ask_agent tools), within the limits of agent.MaxDelegations,
	// agent.MaxHops, agent.MaxVisits and the tree's agent.TreeTurns.
	Delegate bool `json:"delegate,omitempty"`
	// Concurrency, for an llm backend, is how many requests its model
	// server takes at once, as its owner knows it: the agent's requests
	// start only while fewer than this are in flight at its endpoint. 0:
	// the node's --llm-concurrency.
	Concurrency int `json:"concurrency,omitempty"`
	// Tools are the MCP servers and agents an llm agent may call at a
	// turn, besides delegation's (docs/architecture.md, "Tools"); their
	// secrets are kept like APIKey.
	Tools []ToolServer `json:"tools,omitempty"`
	// CardSigner is, for an a2a backend, the peer id of the node whose
	// signature the agent card carried when it was registered (cardsig):
	// the runtime refuses the card if another key signs it later, and the
	// agent page can say "signed by node X". Empty: the card was unsigned.
	CardSigner string `json:"card_signer,omitempty"`
	// Memory, for an llm backend, offers the model the remember and
	// recall tools: facts kept on this node per person (a portal account)
	// and agent, which the person reads and deletes on the account page
	// (docs/agents.md, "Memory").
	Memory bool `json:"memory,omitempty"`
	// HistoryTokens, for an llm backend, is the budget of the history
	// sent to the model, in tokens of ~4 bytes; older turns beyond it are
	// folded into a summary. 0: the node's --llm-history-tokens.
	HistoryTokens int `json:"history_tokens,omitempty"`
}

// String keeps the API key out of every log line and %v.
func (b Backend) String() string {
	key := ""
	if b.APIKey != "" {
		key = "[redacted]"
	}
	return fmt.Sprintf("Backend{kind=%s builtin=%s url=%s model=%s tool=%s delegate=%t memory=%t api_key=%s tools=%v}", b.Kind, b.Builtin, b.URL, b.Model, b.Tool, b.Delegate, b.Memory, key, b.Tools)
}

// GoString keeps the API key out of %#v too.
func (b Backend) GoString() string { return b.String() }

// Validate checks the backend settings; field keys are prefixed "backend.".
func (b Backend) Validate() error {
	var ve ValidationError
	switch b.Kind {
	case BackendBuiltin:
		ok := b.Builtin == BuiltinConformance
		for _, n := range Builtins {
			ok = ok || n == b.Builtin
		}
		if !ok {
			ve.add("backend.builtin", "must be one of %s", strings.Join(Builtins, ", "))
		}
	case BackendCatalogue:
		if b.URL != "" || b.APIKey != "" {
			ve.add("backend.kind", "a catalogue listing has no URL or key: nothing is hosted")
		}
	case BackendLLM:
		if err := CheckHTTPURL(b.URL); err != nil {
			ve.add("backend.url", "%v", err)
		}
		if strings.TrimSpace(b.Model) == "" {
			ve.add("backend.model", "is required for an llm backend")
		}
		checkText(&ve, "backend.model", b.Model, 200, true)
		checkText(&ve, "backend.system_prompt", b.SystemPrompt, 8<<10, false)
		checkText(&ve, "backend.api_key", b.APIKey, 1024, true)
		if b.Concurrency < 0 || b.Concurrency > MaxLLMConcurrency {
			ve.add("backend.concurrency", "must be from 1 to %d (or left out for the node's default)", MaxLLMConcurrency)
		}
	case BackendMCP:
		if err := CheckHTTPURL(b.URL); err != nil {
			ve.add("backend.url", "%v", err)
		}
		if strings.TrimSpace(b.Tool) == "" {
			ve.add("backend.tool", "is required for an mcp backend")
		}
		checkText(&ve, "backend.tool", b.Tool, 200, true)
	case BackendWebhook:
		if err := CheckHTTPURL(b.URL); err != nil {
			ve.add("backend.url", "%v", err)
		}
	case BackendA2A:
		validateA2A(&ve, b)
	default:
		ve.add("backend.kind", "must be one of builtin, llm, mcp, webhook, a2a")
	}
	if b.Concurrency != 0 && b.Kind != BackendLLM {
		ve.add("backend.concurrency", "only an llm agent has a model concurrency")
	}
	if b.Delegate && b.Kind != BackendLLM {
		ve.add("backend.delegate", "only an llm agent can call other agents")
	}
	if b.Memory && b.Kind != BackendLLM {
		ve.add("backend.memory", "only an llm agent has memory")
	}
	switch {
	case b.HistoryTokens != 0 && b.Kind != BackendLLM:
		ve.add("backend.history_tokens", "only an llm agent has a history budget")
	case b.HistoryTokens != 0 && (b.HistoryTokens < MinHistoryTokens || b.HistoryTokens > MaxHistoryTokens):
		ve.add("backend.history_tokens", "must be from %d to %d tokens (or left out for the node's default)", MinHistoryTokens, MaxHistoryTokens)
	}
	validateTools(&ve, b)
	return ve.orNil()
}

// validateA2A checks an a2a backend: only the card URL, over https. Plain
// http is for an agent on the operator's own machine or network, whose
// address the registration's SSRF check then refuses unless the operator
// passed --allow-private-endpoints; anywhere else it would carry the
// conversation in clear text.
func validateA2A(ve *ValidationError, b Backend) {
	if err := CheckHTTPURL(b.URL); err != nil {
		ve.add("backend.url", "%v", err)
	} else if u, _ := url.Parse(b.URL); u.Scheme == "http" && !localHost(u.Hostname()) {
		ve.add("backend.url", "must start with https:// (http:// only for a loopback or private address)")
	}
	for field, v := range map[string]string{
		"backend.builtin": b.Builtin, "backend.model": b.Model, "backend.system_prompt": b.SystemPrompt,
		"backend.tool": b.Tool,
	} {
		if v != "" {
			ve.add(field, "is not used by an a2a backend")
		}
	}
	// An API key or bearer token for an agent whose card requires one.
	checkText(ve, "backend.api_key", b.APIKey, 1024, true)
	if b.CardSigner != "" && !peerIDLike(b.CardSigner) {
		ve.add("backend.card_signer", "is not a peer id")
	}
}

// peerIDLike reports a base58 libp2p peer id (the form cardsig names a
// signer by); agent/cardsig checks the key itself.
func peerIDLike(s string) bool {
	if len(s) < 40 || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", c) {
			return false
		}
	}
	return true
}

// localHost reports a host on the operator's own machine or network: a
// localhost or internal name, or a loopback, private or link-local address.
func localHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()
	}
	if host == "localhost" {
		return true
	}
	for _, suffix := range []string{".localhost", ".local", ".internal"} {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}

// Redacted returns a copy safe to show or return in an API: the key and
// the tool servers' secrets are blanked.
func (b Backend) Redacted() Backend {
	if b.APIKey != "" {
		b.APIKey = ""
	}
	if len(b.Tools) > 0 {
		tools := make([]ToolServer, len(b.Tools))
		for i, t := range b.Tools {
			t.Secret = ""
			tools[i] = t
		}
		b.Tools = tools
	}
	return b
}

// Secrets are the backend's secret values (the API key, the tool
// servers' secrets), for redacting them from text that leaves the node.
func (b Backend) Secrets() []string {
	var out []string
	if b.APIKey != "" {
		out = append(out, b.APIKey)
	}
	for _, t := range b.Tools {
		if s := strings.TrimSpace(t.Secret); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// LogValue keeps the API key out of structured logs.
func (b Backend) LogValue() slog.Value { return slog.StringValue(b.String()) }
