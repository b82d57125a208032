// Package web holds the AgentHub portal's templ components: the layout,
// one page per resource and the HTMX partials. Components render view
// models defined here; handlers convert store types into them, so web
// depends on nothing of ours but agent.
package web

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Page is what the layout needs on every page.
type Page struct {
	Title  string // document title; "AgentHub" is appended
	Nav    string // the active nav item: "home", "agents", "nodes", "register", "account", "login", "signup"
	User   string // handle of the logged-in user; "" for visitors
	Flash  string // one-shot notice from the previous request
	Assets Assets
	// NoIndex asks search engines to keep the page out of their index (a
	// shared conversation: public to whoever has the link, not to all).
	NoIndex bool
}

// Assets are the content-hashed URLs of the static files (static.Path),
// passed in because web does not import static.
type Assets struct {
	CSS   string
	HTMX  string
	JS    string
	Theme string // theme.js, loaded in <head> before the stylesheet
}

// AgentCard is one listing in a list: search results, recent agents, the
// account's agents.
type AgentCard struct {
	ID          string
	Name        string
	DisplayName string
	Description string
	Tags        []string
	Version     string
	Owner       string
	// Publisher is the peer id that signed the listing: "by <owner>"
	// links to its page (PublisherHref).
	Publisher   string
	Status      string // online | stale | offline
	Local       bool
	LastSeen    time.Time
	LastSeenAgo string // "3 min ago", computed by the handler with its clock
	Health      HealthView
	// MixedScripts are the scripts of a display name that mixes them to
	// imitate another (agent.MixedScripts); nil hides the notice.
	MixedScripts []string
	// Host names the node that hosts the agent, so that the same builtin
	// demo on several nodes can be told apart.
	Host HostView
	// Nodes is how many nodes host this listing's group: listings of
	// several nodes with the same name, description and skills show as
	// one card ("on 3 nodes"), this node's or the healthiest first. 0 or
	// 1: only this one.
	Nodes int
	// Verified are the domains the agent's publisher proved it controls
	// (agent/verify), sorted; nil shows no badge.
	Verified []string
}

// HostView is the node an agent lives on: its name ("node-b"; "node
// a1b2c3" when it has none), the end of its peer id when the name is
// shared or missing, whether it is this node, and the full peer id for
// the hover title.
type HostView struct {
	Name   string
	Short  string // "" unless the name alone is ambiguous
	Self   bool
	PeerID string
}

// Label is the host as one line of text: "node-b", "node-b (a1b2c3)".
func (h HostView) Label() string {
	if h.Short != "" && !strings.HasSuffix(h.Name, h.Short) {
		return h.Name + " (" + h.Short + ")"
	}
	return h.Name
}

// OtherHost is another node hosting the same agent (AgentView.Others).
type OtherHost struct {
	ID     string // its listing
	Host   HostView
	Status string
	Health HealthView
}

// UseView is the agent page's "Use this agent" panel: ready-to-copy ways
// to call the agent from outside the portal, on this node's public URL.
type UseView struct {
	Curl      string // the message API call
	MCPConfig string // an MCP client config (mcpServers, "type": "http") for this node's /mcp
	MCPTool   string // the MCP tool call that reaches this agent there ("send_message {...}")
	MCPHelp   string // the /mcp page about this agent
	CardURL   string // the agent's A2A card
	// One-click installs of this node's /mcp: Cursor's and VS Code's
	// install links, and Claude Code's command.
	CursorLink, VSCodeLink, ClaudeCode string
}

// HealthView is how an agent answers, as its host last said: the badge
// on cards and the agent page.
type HealthView struct {
	State     string // healthy | degraded | failing | unknown (never "")
	LatencyMS int    // median answer time; 0 hides it
	LastOK    time.Time
	LastOKAgo string // "3 min ago"; "" when it never answered
	Uses7d    int    // conversations its host held with it this week; 0 hides it
}

// TagCount is a tag and how many visible listings carry it.
type TagCount struct {
	Tag   string
	Count int
}

// HomeView is the overview page.
type HomeView struct {
	Page    Page
	Agents  int // visible (not offline) listings
	Online  int
	Tags    int
	Nodes   int
	Recent  []AgentCard
	TopTags []TagCount
	// Syncing while a catalogue-sync fill runs: SyncHeld listings held of
	// the SyncAnnounced the hosts heard say they host.
	Syncing                 bool
	SyncHeld, SyncAnnounced int
}

// Option is one choice of a select.
type Option struct {
	Value    string
	Label    string
	Selected bool
	// Title, when set, explains the option (its tooltip).
	Title string
}

// TagChip is a tag filter that toggles itself in the query when clicked.
type TagChip struct {
	Tag      string
	Count    int
	Selected bool
	Href     string // /agents with this tag toggled and the other filters kept
}

// AgentsView is the search page.
type AgentsView struct {
	Page          Page
	Q             string
	Tags          []string // selected tags, kept as hidden inputs
	StatusOptions []Option
	HealthOptions []Option
	Chips         []TagChip
	VisibleChips  int    // how many chips show before the "more" control
	ClearHref     string // "" when no filter is active
	Results       ResultsView
	SortOptions   []Option // relevance (with a query), newest, name
	// VerifiedOptions is the publisher filter: any, or verified
	// publishers only.
	VerifiedOptions []Option
}

// ResultsView is the result list: the part HTMX swaps as you type.
type ResultsView struct {
	Agents   []AgentCard
	NextHref string // "" on the last page
	Error    string // an invalid query, shown instead of results
	Filtered bool   // a query or filter is active (changes the empty-state text)
	// Count is how many agents there are in all, -1 when unknown (a
	// filtered search); then the page's own count is shown.
	Count int
}

// CountText is the line above the results: the total when known ("23
// agents"), else how many this page shows.
func (r ResultsView) CountText() string {
	n, noun := r.Count, "agents"
	if n < 0 {
		n = len(r.Agents)
	}
	if n == 1 {
		noun = "agent"
	}
	switch {
	case r.Count >= 0:
		return strconv.Itoa(n) + " " + noun
	case r.NextHref != "":
		return strconv.Itoa(n) + " matching " + noun + " here, more on the next page"
	}
	return strconv.Itoa(n) + " matching " + noun
}

// AgentView is one listing, every field of the record.
type AgentView struct {
	Page        Page
	ID          string
	Name        string
	DisplayName string
	Description string
	Tags        []string
	Skills      []agent.Skill
	Version     string
	Publisher   string
	Owner       string
	Endpoints   []agent.Endpoint
	Seq         uint64
	IssuedAt    time.Time
	ExpiresAt   time.Time
	Status      string
	LastSeen    time.Time
	LastSeenAgo string
	Health      HealthView
	HostPeerID  string
	Local       bool
	CanManage   bool   // the viewer may edit and delete it
	ChatURL     string // "" hides the chat button
	// Install is a catalogue listing's install line: nothing is hosted,
	// its users run it themselves (no chat).
	Install string
	// ListedFrom says where a catalogue listing came from (its upstream
	// registry, name and version), "" when unknown.
	ListedFrom string
	// MixedScripts as on AgentCard.
	MixedScripts []string
	Host         HostView
	Use          UseView
	// Others are the other nodes hosting the same agent (same name,
	// description and skills), as the grouped card counts them.
	Others []OtherHost
	// CardSigner is the node that signs the A2A card at Use.CardURL
	// (this node); zero when cards go unsigned. UpstreamSigner is, for an
	// a2a backend, the node whose signature the external agent's own card
	// carried when it was registered (agent.Backend.CardSigner); zero:
	// unsigned, or not an a2a backend.
	CardSigner     HostView
	UpstreamSigner HostView
	// Verified are the domains the publisher proved (as on AgentCard).
	Verified []string
}

// SignedBy is "Card signed by node node-b", "... by node a1b2c3d4", or
// "... by this node"; "" for the zero HostView.
func (h HostView) SignedBy() string {
	switch {
	case h.PeerID == "":
		return ""
	case h.Name == "this node" || strings.HasPrefix(h.Name, "node "):
		return "Card signed by " + h.Label()
	}
	return "Card signed by node " + h.Label()
}

// NodesView is this node and the peers it has heard from.
type NodesView struct {
	Page         Page
	PeerID       string
	Name         string   // this node's --node-name
	Verified     []string // the domains this node proved (--verify-domain)
	Addrs        []string // full multiaddrs ending in /p2p/<id>
	Peers        int      // connected peers
	AgentsHosted int
	Version      string
	Nodes        []NodeRow
	NAT          NodeNAT // reachability, relay addresses, peers by connection
	// NodesKnown counts every node of the network this node knows,
	// itself included.
	NodesKnown int
	// NodesHeard counts the other nodes heard from (heartbeats), every
	// page of them; Nodes is one page.
	NodesHeard int
	// PrevHref and NextHref are the pages of Nodes before and after this
	// one (plain links: paging needs no script); empty at either end.
	PrevHref, NextHref string
	Map                NetMap
}

// NodeRow is one known node.
type NodeRow struct {
	PeerID           string
	Host             HostView // its name, as everywhere else
	Status           string
	Version          string
	AgentsHosted     int
	LastHeartbeat    time.Time
	LastHeartbeatAgo string
	Self             bool
	// Verified are the domains the node proved it controls.
	Verified []string
	// Announced is how many listings the node says it hosts (its signed
	// agents_hosted) when a heartbeat of it was heard since this node
	// started (AnnouncedKnown); AgentsHosted is what this node holds of
	// them.
	Announced      int
	AnnouncedKnown bool
}

// AuthView is the sign-up or login form. Passwords are never rendered back.
type AuthView struct {
	Page   Page
	Handle string
	Next   string            // safe local path to go to afterwards
	Errors map[string]string // "handle", "password", "password_confirm"
	// Focus is the field to type in first after an error ("" on a fresh
	// form: the handle): a mismatch of the two passwords, which are never
	// rendered back, starts again at the first.
	Focus     string
	FormError string // not tied to a field (wrong password)
	// Reason says why a visitor sent to log in must do so ("Log in to
	// register an agent."); empty on a plain visit.
	Reason string
}

// AgentFormView is the register and edit form, with what the person typed
// and a message per bad field (keys as in agent.ValidationError: "name",
// "tags[2]", "skills[0].id", "backend.url").
type AgentFormView struct {
	Page        Page
	Edit        bool   // editing: the name is fixed
	ID          string // the agent being edited
	Action      string // where the form posts
	Name        string
	DisplayName string
	Description string
	Tags        string // comma-separated, as typed
	Version     string
	Skills      []SkillRow
	// FocusSkill is the index of the block "Add skill" just added (its
	// first field gets autofocus), or 0 (none) otherwise.
	FocusSkill int
	Backend    BackendForm
	Errors     map[string]string
	// CanTest shows the Test backend button; Test is what it found (a
	// form re-rendered without JavaScript).
	CanTest bool
	Test    *BackendTest
	// Health is the edited agent's health; nil hides it.
	Health *OwnerHealth
	// Picker is the tool picker under the Tools field (web/toolpicker.go).
	Picker ToolPickerView
}

// SkillRow is one skill block of the form; Examples is one per line.
type SkillRow struct {
	ID          string
	Name        string
	Description string
	Examples    string
}

// BackendForm is the backend part of the form. The API key is never
// rendered back: HasStoredKey says one is kept, KeyDropped that the person
// typed one that must be typed again after an error.
type BackendForm struct {
	Kind         string
	Builtin      string
	URL          string
	Model        string
	SystemPrompt string
	Tool         string
	Delegate     bool // llm: may call other agents
	// Concurrency is an llm backend's own requests at once, as typed
	// ("": the node's --llm-concurrency).
	Concurrency string
	// Memory: the llm agent remembers facts of people (remember, recall).
	Memory bool
	// HistoryTokens is an llm backend's own history budget, as typed
	// ("": the node's --llm-history-tokens).
	HistoryTokens string
	HasStoredKey  bool
	KeyDropped    bool
	// Tools is the llm agent's tool servers, one a line (an MCP server's
	// URL, optionally followed by "Header: secret", or an agent id), with
	// every secret left out: a header with nothing after it keeps the
	// stored secret. ToolSecretDropped says a typed secret was not kept.
	Tools             string
	ToolSecretDropped bool
}

// AccountView is the account page.
type AccountView struct {
	Page         Page
	Handle       string
	Agents       []AgentCard
	MoreAgents   bool // more agents than the page shows
	Tokens       []TokenRow
	NewToken     string // a token just created, shown this once
	NewTokenName string
	TokenName    string            // typed token name, kept after an error
	Errors       map[string]string // "token_name", "current_password", "password", "password_confirm", "confirm_handle", "delete_password"
	// Focus is the field that gets the focus after an error: the first
	// wrong one of the form that was sent.
	Focus string
	// ConfirmHandle is the handle typed to confirm a deletion, kept after
	// an error.
	ConfirmHandle string
	// Health is the health of the local agents among Agents, by id; nil
	// hides it.
	Health map[string]OwnerHealth
	// Memories are what this node's agents with memory remember of the
	// user, per agent; ShowMemories shows the panel (the node keeps
	// memories).
	Memories     []MemoryGroup
	ShowMemories bool
}

// MemoryGroup is what one agent remembers of the user, newest first.
type MemoryGroup struct {
	AgentID   string
	AgentName string // "": the agent is no longer listed
	Facts     []MemoryRow
}

// MemoryRow is one remembered fact.
type MemoryRow struct {
	ID        int64
	Fact      string
	CreatedAt time.Time
}

// TokenRow is one personal API token (never the token itself).
type TokenRow struct {
	ID         int64
	Name       string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero: never used
}

// ErrorView is an error page.
type ErrorView struct {
	Page    Page
	Status  int
	Title   string
	Message string
}

// NodeNAT is how the network reaches this node (the /nodes page's
// reachability panel).
type NodeNAT struct {
	Reachability string   // public, private or unknown
	RelayAddrs   []string // full addresses through relays
	DirectPeers  int
	RelayedPeers int
}

// firstChips are the tag chips shown at once; selected chips always are.
func firstChips(v AgentsView) []TagChip {
	n := max(v.VisibleChips, 0)
	if n == 0 || n > len(v.Chips) {
		n = len(v.Chips)
	}
	for n < len(v.Chips) && v.Chips[n].Selected {
		n++
	}
	return v.Chips[:n]
}

// moreChips are the chips behind the "more" control.
func moreChips(v AgentsView) []TagChip {
	return v.Chips[len(firstChips(v)):]
}

// PublisherView is one publisher's page: the agents a node signed, or one
// account's of them.
type PublisherView struct {
	Page     Page
	PeerID   string   // the publisher (the node that signed the listings)
	Owner    string   // "" for every listing of the publisher
	Node     HostView // the publisher as a node, named as the cards name hosts
	Verified []string // domains the publisher proved (as on AgentCard)
	AllHref  string   // the publisher's whole page, when Owner narrows it
	Results  ResultsView
}

// Title is the page's heading: "alice on node-b", or "node-b".
func (v PublisherView) Title() string {
	if v.Owner != "" {
		return v.Owner + " on " + v.Node.Label()
	}
	return "Agents published by " + v.Node.Label()
}
