package agent

import (
	"errors"
	"strings"
	"time"
)

// Approval is a call of a consequential tool an llm agent wants to make,
// waiting for the sender's yes or no (docs/agents.md, "Tools and
// approvals"): the tool, its server and the arguments, as the person
// reads them. ID answers it (ApprovalAnswer), until ExpiresAt.
type Approval struct {
	ID        string    `json:"id"`
	Tool      string    `json:"tool"`
	Server    string    `json:"server"`
	Args      string    `json:"args"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ApprovalAnswer is the sender's answer to an Approval.
type ApprovalAnswer struct {
	ID      string `json:"id"`
	Approve bool   `json:"approve"`
}

// MaxApprovalIDLen bounds an approval id as a surface reads it.
const MaxApprovalIDLen = 64

// ErrUnknownApproval answers an approval that is not waiting.
var ErrUnknownApproval = NewError(KindNotFound, CodeUnknownApproval,
	"This approval is no longer waiting: it expired, was answered already, or belongs to another conversation. Send your request again and answer the new approval.")

// NeedsApproval ends a turn waiting for the sender to approve a tool call
// (a NeedsInput whose prompt says what to approve): InputPrompt reads
// its prompt, PendingApproval the call.
func NeedsApproval(prompt string, a Approval) error {
	return &inputRequest{prompt: prompt, approval: &a}
}

// PendingApproval is the tool call a turn that ended with NeedsApproval
// waits on; ok is false for any other outcome.
func PendingApproval(err error) (a Approval, ok bool) {
	var ir *inputRequest
	if errors.As(err, &ir) && ir.approval != nil {
		return *ir.approval, true
	}
	return Approval{}, false
}

// ApprovalWord reads a message that answers an approval in words:
// "approve" (yes, ok, allow) or "deny" (no, reject); ok is false for any
// other text.
func ApprovalWord(text string) (approve, ok bool) {
	w := strings.ToLower(strings.Trim(strings.TrimSpace(text), ".!"))
	switch w {
	case "approve", "approved", "yes", "y", "ok", "allow":
		return true, true
	case "deny", "denied", "no", "n", "reject":
		return false, true
	}
	return false, false
}
