package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Approvals of consequential tool calls (docs/agents.md, "Tools and
// approvals"): a tool that is not read-only (its server's readOnlyHint;
// one that is destructive is not read-only), and an agent called as a
// tool, run only once the
// sender says yes, unless the owner allows them (agent.ToolServer.Allow).
// The turn ends waiting for input (agent.NeedsApproval) and the call
// waits here, on the hosting runtime, with the model's messages so far;
// the conversation's next turn answers it, and the turn goes on from
// there.

// Defaults of the approval bounds in RuntimeOptions.
const (
	DefaultApprovalTTL       = 15 * time.Minute
	DefaultApprovalsPerAgent = 8
	DefaultApprovals         = 128
)

// approvalNeeded is what toolBox.admit returns for a call that waits for
// the sender: answerLLM holds it and ends the turn.
type approvalNeeded struct {
	ref  toolRef
	args map[string]any
}

func (*approvalNeeded) Error() string { return "the tool call needs the sender's approval" }

// errApprovalElsewhere refuses a consequential call in a turn no one on
// this node can approve: another agent's or another node's.
var errApprovalElsewhere = errors.New("this tool changes things and needs a person's approval, but this message was passed on by another agent or node, where no one can give it here; it was not run. Tell the person to ask this agent directly (chat or A2A) so they can approve it")

// errApprovalNoConversation refuses a consequential call in a turn that
// has no conversation to resume.
var errApprovalNoConversation = errors.New("this tool changes things and needs a person's approval, but this message has no conversation to wait in; it was not run")

// unattended refuses a consequential call in a turn whose surface
// cannot ask a person (agent.Turn.NoApprovals).
type unattended struct{ why string }

func (u *unattended) Error() string {
	return "this tool changes things and needs a person's approval: " + u.why + "; it was not run"
}

// needsApproval reports whether a call of ref waits for the sender.
func needsApproval(ref toolRef) bool {
	if ref.memory || ref.server.Allows(ref.name) {
		return false // the node's own memory tools keep the person's facts for them (memory.go)
	}
	if ref.server.Agent != "" {
		return true // another agent can do anything it can
	}
	// MCP reads destructiveHint only for a tool that is not read-only
	// (its default is true): a read-only tool runs, any other asks.
	a := ref.annotations
	return a.ReadOnlyHint == nil || !*a.ReadOnlyHint
}

// approvalGate is admit's part for a consequential call c: nil when
// the sender answered yes, the refusal the model reads when no (or when
// no one can be asked), else an *approvalNeeded.
func (tb *toolBox) approvalGate(c llmToolCall, ref toolRef, args map[string]any) error {
	if approve, answered := tb.answers[c.ID]; answered {
		if approve {
			return nil
		}
		return errors.New("the person denied this call; it was not run. Do not call it again unless they ask; say what you would have done instead")
	}
	if tb.turn.FromPeer != "" || tb.turn.Trace.Hops() > 0 {
		return errApprovalElsewhere
	}
	if why := tb.turn.NoApprovals; why != "" {
		return &unattended{why}
	}
	if tb.turn.ConversationID == "" {
		return errApprovalNoConversation
	}
	if !tb.r.roomForApproval(tb.turn) {
		return errTooManyApprovals
	}
	return &approvalNeeded{ref: ref, args: args}
}

// pendingCall is a tool call waiting for approval: whose it is, and where
// the turn stopped (the model's messages, the round's calls still to
// answer, the first of them the one waiting).
type pendingCall struct {
	approval              agent.Approval
	agentID, conv, caller string
	messages              []llmMessage
	calls                 []llmToolCall
}

// approvals are the pending calls of this runtime's agents, one per
// conversation (a newer one replaces it), bounded per agent and in all.
type approvals struct {
	perAgent, total int
	mu              sync.Mutex
	pending         map[string]*pendingCall // by agent and conversation
}

func newApprovals(o RuntimeOptions) *approvals {
	return &approvals{perAgent: o.ApprovalsPerAgent, total: o.Approvals, pending: map[string]*pendingCall{}}
}

func convKey(agentID, conv string) string { return agentID + "/" + conv }

// callerOwner is who may answer: the conversation owner part of the
// turn's caller (agent.WithCaller; a surface may add "@<client>").
func callerOwner(ctx context.Context) string {
	owner, _, _ := strings.Cut(agent.CallerOf(ctx), "@")
	return owner
}

// sweepLocked drops the expired calls.
func (a *approvals) sweepLocked(now time.Time) {
	for k, p := range a.pending {
		if !now.Before(p.approval.ExpiresAt) {
			delete(a.pending, k)
		}
	}
}

// errTooManyApprovals refuses a call when the bounds are full.
var errTooManyApprovals = errors.New("too many tool calls are waiting for approval on this node; it was not run. Tell the person to answer or let the waiting ones expire, then try again")

// roomForApproval reports whether a call of t's agent may wait.
func (r *Runtime) roomForApproval(t agent.Turn) bool {
	a := r.approvals
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked(r.opts.Now())
	return a.roomLocked(t.AgentID, convKey(t.AgentID, t.ConversationID))
}

// roomLocked reports whether a call of agentID may wait, the one waiting
// at key (which it would replace) not counted.
func (a *approvals) roomLocked(agentID, key string) bool {
	perAgent, total := 0, 0
	for k, q := range a.pending {
		if k == key {
			continue
		}
		total++
		if q.agentID == agentID {
			perAgent++
		}
	}
	return perAgent < a.perAgent && total < a.total
}

// hold keeps p (replacing the conversation's earlier one): false when the
// agent's or the node's bound is reached.
func (r *Runtime) hold(p *pendingCall) bool {
	a := r.approvals
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked(r.opts.Now())
	key := convKey(p.agentID, p.conv)
	if !a.roomLocked(p.agentID, key) {
		return false
	}
	a.pending[key] = p
	return true
}

// WaitingApproval is the tool call of agentID waiting in conversation conv
// for the caller of ctx (agent.WithCaller) to answer: what a page shows
// again when it is opened while the call waits. ok is false when none
// waits for this caller.
func (r *Runtime) WaitingApproval(ctx context.Context, agentID, conv string) (_ agent.Approval, ok bool) {
	a := r.approvals
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked(r.opts.Now())
	p := a.pending[convKey(agentID, conv)]
	if p == nil || conv == "" || p.caller != callerOwner(ctx) {
		return agent.Approval{}, false
	}
	return p.approval, true
}

// take removes and returns the call t answers, with the answer: t's
// Approval, or a word ("approve", "deny") while one waits. No call (nil)
// when t answers none; ErrUnknownApproval when t's Approval names one
// that is not waiting for this caller in this conversation. Any other
// message drops the waiting call: the person has moved on.
func (r *Runtime) take(ctx context.Context, t agent.Turn) (*pendingCall, bool, error) {
	a := r.approvals
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked(r.opts.Now())
	key := convKey(t.AgentID, t.ConversationID)
	p := a.pending[key]
	if p != nil && p.caller != callerOwner(ctx) {
		p = nil // another caller's: it looks like none
	}
	if t.Approval != nil {
		if p == nil || t.ConversationID == "" || p.approval.ID != t.Approval.ID {
			return nil, false, agent.ErrUnknownApproval
		}
		delete(a.pending, key)
		return p, t.Approval.Approve, nil
	}
	if p == nil {
		return nil, false, nil
	}
	delete(a.pending, key)
	approve, ok := agent.ApprovalWord(t.Text)
	if !ok {
		return nil, false, nil
	}
	return p, approve, nil
}

// resumeApproval sets req to where the turn that t answers stopped and
// returns the calls to answer before the next round; none when t answers
// no approval.
func (r *Runtime) resumeApproval(ctx context.Context, t agent.Turn, req *llmRequest, tb *toolBox) ([]llmToolCall, error) {
	p, approve, err := r.take(ctx, t)
	if err != nil || p == nil {
		return nil, err
	}
	req.Messages = p.messages
	if tb != nil {
		tb.answers = map[string]bool{p.calls[0].ID: approve}
	}
	return p.calls, nil
}

// pauseForApproval ends a turn whose call calls[0] waits for approval
// (err an *approvalNeeded): it keeps the call and returns the prompt.
// Any other err is returned as is.
func (r *Runtime) pauseForApproval(ctx context.Context, t agent.Turn, messages []llmMessage, calls []llmToolCall, err error) error {
	var an *approvalNeeded
	if !errors.As(err, &an) {
		return err
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id) // crypto/rand.Read never fails (Go 1.24+)
	ap := agent.Approval{ID: "ap" + hex.EncodeToString(id), Tool: an.ref.name, Server: an.ref.label,
		Args: foldArgs(an.args), ExpiresAt: r.opts.Now().Add(r.opts.ApprovalTTL)}
	p := &pendingCall{approval: ap, agentID: t.AgentID, conv: t.ConversationID, caller: callerOwner(ctx),
		messages: messages, calls: calls}
	if !r.hold(p) { // filled up since admit looked
		return agent.NeedsInput("Too many tool calls are waiting for approval on this node, so this one could not wait. Send your request again in a few minutes.")
	}
	what := "the tool " + ap.Tool + " of " + ap.Server
	if an.ref.server.Agent != "" {
		what = "the agent " + ap.Server + " (send_message)"
	}
	prompt := fmt.Sprintf("Approve this call? The agent wants to call %s with %s. Answer approve or deny within %s; until then nothing is run.",
		what, ap.Args, r.opts.ApprovalTTL.Round(time.Minute))
	return agent.NeedsApproval(prompt, ap)
}
