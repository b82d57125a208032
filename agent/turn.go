package agent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
)

// ChatMessage is one earlier message of a conversation.
type ChatMessage struct {
	Role string // "user" or "agent"; others are skipped
	Text string
}

// Chat message roles.
const (
	RoleUser  = "user"
	RoleAgent = "agent"
	// RoleError marks a stored failure of a turn (never sent to agents).
	RoleError = "error"
	// RoleStep marks a stored delegation step: one agent asking another
	// during a turn (its text is the Step as JSON; never sent to agents).
	RoleStep = "step"
)

// Turn is a message to an agent plus the conversation so far (oldest first).
type Turn struct {
	AgentID, ConversationID string
	History                 []ChatMessage
	Text                    string
	// Owner is the agent owner the caller's conversation is bound to. A
	// hosting node refuses the turn (ErrOwnerChanged) when its record of
	// the agent has another owner, so a caller with a stale cache never
	// sends history to a new owner's backend.
	Owner string
	// Trace follows the message through agents that call agents.
	Trace Trace
	// HistoryOmitted says History was left out on purpose: the calling
	// node was told the agent's backend does not read it (a builtin such
	// as echo). A backend that reads it refuses the turn with
	// ErrHistoryRequired and answers nothing.
	HistoryOmitted bool
	// OnHistoryUnread, if set, is called when the backend that answers
	// the turn does not read History: a host tells its caller, which then
	// leaves the history out of the agent's next turns. It is never
	// serialized.
	OnHistoryUnread func()
	// OnStep, if set, hears of each delegation the agent makes while it
	// answers, as it starts and as it ends. It is never serialized.
	OnStep func(Step)
	// OnWait, if set, hears while the turn waits for its model's queue
	// (agent/runtime/modelsched): how many requests are ahead, as that
	// changes, and -1 once the model takes it. It is never serialized.
	OnWait func(ahead int)
	// MessageID is the id the sender gave its message (A2A's messageId);
	// empty when it gave none.
	MessageID string
	// Yield, if set, takes what the agent makes besides its reply text,
	// as it makes it (see Output). A surface that shows text alone leaves
	// it nil, and the agent answers in text. It is never serialized: a
	// turn another node runs yields text alone.
	Yield func(Output)
	// Approval, if set, answers a tool call the agent asked the sender to
	// approve (NeedsApproval); a bare "approve" or "deny" as Text does
	// too. It is never serialized: approvals do not cross nodes.
	Approval *ApprovalAnswer
	// FromPeer is the node that passed the turn on ("peer:<id>"), empty
	// for a turn that came in on this node: no one there can approve a
	// tool call, so such a turn never waits for an approval.
	FromPeer string
	// NoApprovals, if set, says why no person can approve a tool call in
	// this turn (a surface whose caller may be a program): such calls are
	// refused with it, never asked.
	NoApprovals string
	// Person is the portal account (its id) of the person whose message
	// this is, when this node knows them: the key of an agent's memory of
	// them (docs/agents.md, "Memory"). 0: anyone else (an anonymous
	// caller, another agent, a turn another node sent). It is never
	// serialized: a person is an account of one node.
	Person int64
}

// Output is something a turn yields besides its reply text.
type Output struct {
	// Artifact is a result the agent made: text, a file or data.
	Artifact *Artifact
	// Message says the reply stands alone: a message, not the outcome of
	// a task anyone follows (A2A answers it as a Message, not a Task).
	Message bool
}

// Artifact is a result of a turn. Chunks of one artifact share its ID:
// Append adds a chunk's parts to the artifact so far, LastChunk marks the
// last one.
type Artifact struct {
	ID, Name          string
	Parts             []Part
	Append, LastChunk bool
}

// Part is one piece of an artifact: text, structured data, or a file.
// Exactly one of Text, Data and File is set.
type Part struct {
	Text string
	Data map[string]any
	File *File
}

// File is a file an agent made: its bytes, or a URL where it is.
type File struct {
	Name, MediaType string
	Bytes           []byte
	URL             string
}

// NeedsInput ends a turn that waits for more from the sender: the agent
// asks prompt, and the turn's task resumes with the sender's next message
// on it (A2A's input-required state). It is an error value so that it
// passes unchanged through the layers a reply goes through; those that
// keep conversations store the prompt as the agent's reply (InputPrompt).
func NeedsInput(prompt string) error { return &inputRequest{prompt: prompt} }

type inputRequest struct {
	prompt   string
	approval *Approval // set when the input is a yes or no to a tool call (approval.go)
}

func (e *inputRequest) Error() string { return "needs input: " + e.prompt }

// InputPrompt is the prompt of a turn that ended waiting for input
// (NeedsInput); ok is false for any other outcome.
func InputPrompt(err error) (prompt string, ok bool) {
	var ir *inputRequest
	if errors.As(err, &ir) {
		return ir.prompt, true
	}
	return "", false
}

// MaxMessageBytes bounds the text of one message to an agent, wherever it
// comes from (a person, another node, another agent).
const MaxMessageBytes = 8 << 10

// Delegation limits: what one turn may set going across the planet.
const (
	// MaxDelegations is how many tool calls (find_agents, ask_agent) an
	// agent may make in one turn.
	MaxDelegations = 8
	// MaxHops is how many agents deep a message may be passed on: the
	// user's agent asking a second is one hop.
	MaxHops = 3
)

// TraceMetaKey is where a delegated message carries its Trace: the key in
// MCP's _meta (node to node) and in A2A message metadata (to and from
// other A2A agents), so hop limits hold across nodes and protocols.
const TraceMetaKey = "agentsite/trace"

// TraceFrom reads a Trace carried in metadata: ok is false when one is
// there but malformed or over the limits; a missing one is a zero Trace.
func TraceFrom(md map[string]any) (t Trace, ok bool) {
	v, found := md[TraceMetaKey]
	if !found || v == nil {
		return Trace{}, true
	}
	raw, err := json.Marshal(v)
	if err != nil || json.Unmarshal(raw, &t) != nil || t.ID == "" || !t.Valid() {
		return Trace{}, false
	}
	return t, true
}

// Trace is what travels with a delegated message: an id for the whole
// exchange and the agents that passed it on, the first caller first. Its
// length is the message's hop count; no agent may appear in it twice.
//
// On the wire (MarshalJSON) it also carries what is left of the budget of
// the message's whole tree and how often each agent was asked; in this
// process every copy shares one ledger of them, so all the branches that
// run here spend from the same budget (agent/budget.go).
type Trace struct {
	ID     string
	Agents []string
	tree   *ledger
}

// NewTrace starts a trace for a message from a person.
func NewTrace() Trace {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return Trace{ID: hex.EncodeToString(b), tree: &ledger{left: TreeTurns}}
}

// Hops is how many agents have passed the message on.
func (t Trace) Hops() int { return len(t.Agents) }

// Pass is the trace of a message agent caller passes on to agent callee,
// or an error the calling model can read when that would exceed MaxHops,
// bring an agent back into the trace (a loop), ask callee more than
// MaxVisits times in the whole tree, or go over the tree's budget or the
// sender's chat budget (ErrDelegationBudget). A turn it allows is spent
// from the tree's budget; the trace it returns shares it.
func (t Trace) Pass(caller, callee string) (Trace, error) {
	if callee == caller || slices.Contains(t.Agents, callee) {
		return Trace{}, ErrDelegationLoop
	}
	if len(t.Agents)+1 > MaxHops {
		return Trace{}, ErrDelegationDepth
	}
	if err := t.tree.spend(callee); err != nil {
		return Trace{}, err
	}
	return Trace{ID: t.ID, Agents: append(slices.Clip(t.Agents), caller), tree: t.tree}, nil
}

// Valid reports whether a trace from another node keeps to the limits.
func (t Trace) Valid() bool {
	if len(t.ID) > 64 || len(t.Agents) > MaxHops || !t.validTree() {
		return false
	}
	for i, a := range t.Agents {
		if !ValidID(a) || slices.Contains(t.Agents[:i], a) {
			return false
		}
	}
	return true
}

// Step is one delegation an agent made during a turn: asking another agent
// (AgentID, Text → Reply), searching the catalogue (Tool find_agents) or
// calling a tool of one of its tool servers (Tool call_tool: Name at
// Server, Text its arguments, Reply a summary of the result).
type Step struct {
	Tool      string `json:"tool"`                 // ask_agent, find_agents or call_tool
	AgentID   string `json:"agent_id,omitempty"`   // ask_agent: who was asked
	AgentName string `json:"agent_name,omitempty"` // its display name, for people
	Host      string `json:"host,omitempty"`       // the node hosting it (short), for people
	Text      string `json:"text"`                 // the question, or the search
	Reply     string `json:"reply,omitempty"`      // the answer, once done
	Error     string `json:"error,omitempty"`      // why it failed, once done
	Done      bool   `json:"done"`
	// Name and Server are, for call_tool, the tool's own name and the
	// server it was called on (its URL's host and path).
	Name   string `json:"name,omitempty"`
	Server string `json:"server,omitempty"`
	// DurationMS is how long the call took, once done (call_tool, and an
	// agent called as a tool).
	DurationMS int64 `json:"duration_ms,omitempty"`
}

// ParseStep reads a stored step message (RoleStep: the Step as JSON); a
// text that is not one, or names no tool, is no step.
func ParseStep(text string) (Step, bool) {
	var s Step
	if err := json.Unmarshal([]byte(text), &s); err != nil || s.Tool == "" {
		return Step{}, false
	}
	return s, true
}
