package agent

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
}
