package chatws

import (
	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// Frame types (docs/architecture.md: the browser sends message; the node answers
// with started, chunks, then done or error).
const (
	TypeMessage = "message"
	// TypeStop stops the reply on its way in conversation_id (or, without
	// one, this socket's latest turn): it ends as an error frame with code
	// stopped, stored with the partial reply.
	TypeStop = "stop"
	// TypeRetry sends the last message of conversation_id again, in place
	// of its failed or stopped exchange; TypeEdit replaces that message
	// with text. Both answer like a message.
	TypeRetry = "retry"
	TypeEdit  = "edit"
	// TypeApproval answers the tool call a done frame's approval waits
	// on ({"approval": {"id": ..., "approve": true}}); it answers like a
	// message.
	TypeApproval = "approval"
	// TypeAttach asks for the reply still on its way in conversation_id
	// (after a reload, or a reconnect): attached (the text so far) and the
	// rest of the turn's frames, or idle when there is none.
	TypeAttach   = "attach"
	TypeAttached = "attached"
	TypeIdle     = "idle"
	// TypeStarted: the message is stored in conversation_id (text is the
	// conversation's title); the agent is being asked.
	TypeStarted = "started"
	TypeChunk   = "chunk"
	TypeDone    = "done"
	TypeError   = "error"
	// TypeStep reports a delegation the agent makes while it answers:
	// asking another agent, or searching the catalogue (Step), once as it
	// starts and once as it ends (step.done).
	TypeStep = "step"
	// TypeWaiting reports the turn waiting in its model's queue (the model
	// scheduler): ahead is how many requests go first, as that changes,
	// and -1 once the model takes the turn.
	TypeWaiting = "waiting"
)

// In is a frame from the browser: a message to an agent, in a new
// conversation or the one named; or stop, retry, edit or attach about
// conversation_id.
type In struct {
	Type           string `json:"type"`
	AgentID        string `json:"agent_id"`
	ConversationID string `json:"conversation_id,omitempty"`
	Text           string `json:"text"`
	// Approval is an approval frame's answer.
	Approval *agent.ApprovalAnswer `json:"approval,omitempty"`
}

// Out is a frame to the browser: a chunk of the reply, done (with the
// whole stored reply, as text and as rendered HTML) or error.
//
// An error frame says what became of the message it answers, so the page
// can tell the person whether to send it again (build it with errorFrame):
//   - stored: the message is saved in its conversation (conversation_id)
//     and shows after a reload. False for a refused frame, rate limiting, a
//     full queue and every check before the message is saved.
//   - sent: the message was handed to the agent's backend or hosting node,
//     so the agent may have seen it. False when it surely did not (nothing
//     stored, chat not available on this node, the host unreachable or
//     refusing the turn, a disallowed backend address) and no reply chunk
//     came.
//
// Both are absent only when a turn crashed (a panic) and neither is known.
type Out struct {
	Type           string `json:"type"`
	Text           string `json:"text,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	MessageID      int64  `json:"message_id,omitempty"`
	Code           string `json:"code,omitempty"`
	Message        string `json:"message,omitempty"`
	Stored         *bool  `json:"stored,omitempty"`
	Sent           *bool  `json:"sent,omitempty"`
	// HTML is a done frame's reply rendered from Markdown and sanitized
	// (web/markdown): the page shows it in place of the streamed chunks.
	// A chunk frame may carry the reply so far rendered the same way
	// (markdown.RenderPartial): its finished lines as HTML, and Tail, the
	// unfinished line, as plain text to show after them; chunks without
	// HTML append to that tail.
	HTML string `json:"html,omitempty"`
	Tail string `json:"tail,omitempty"`
	// Step is the delegation of a step frame.
	Step *agent.Step `json:"step,omitempty"`
	// Ahead is a waiting frame's place in the model's queue.
	Ahead *int `json:"ahead,omitempty"`
	// Approval is set on a done frame whose reply waits for the person
	// to approve a tool call: answer it with an approval frame.
	Approval *agent.Approval `json:"approval,omitempty"`
}

// Codes of this transport's own refusals, before a turn starts.
const (
	CodeBadFrame       = "bad_frame"
	CodeBusy           = "busy"
	CodeBadOrigin      = "bad_origin"
	CodeNoSession      = "no_session"
	CodeTooManySockets = "too_many_sockets"
	CodeBadHandshake   = "bad_handshake"
)

// errorFrame is an error frame about a message: stored and sent as Out
// says.
func errorFrame(code, message, conversationID string, stored, sent bool) Out {
	return Out{Type: TypeError, Code: code, Message: message, ConversationID: conversationID, Stored: &stored, Sent: &sent}
}

// turnErrorFrame is the error frame for a failed turn: Turn returns the
// conversation exactly when it stored the message before failing, and
// whether the agent got it (a streamed chunk proves it did).
func turnErrorFrame(e *httpkit.Error, res chat.Result, conversationID string, streamed bool) Out {
	stored := res.Conversation.ID != ""
	if stored {
		conversationID = res.Conversation.ID
	}
	return errorFrame(e.Code, e.Message, conversationID, stored, stored && (streamed || res.Sent))
}
