package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// SendMessage is POST /api/v1/agents/{id}/messages: one synchronous turn
// for scripts. With a bearer token the conversation belongs to its account;
// without one the conversation id itself is the capability to continue it.
func (a *API) SendMessage(w http.ResponseWriter, r *http.Request) {
	owner, err := a.owner(r)
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	address := httpkit.ClientKey(r)
	visitor := "ip:" + address
	if owner == chat.APIAnonymous {
		visitor = a.visitor(r, address)
		if a.Anon != nil {
			if !a.Anon.Allow(address, a.Now().UTC()) {
				a.Fail(w, r, httpkit.ErrRateLimited)
				return
			}
			release, err := a.Anon.Hold(address)
			if err != nil {
				a.Fail(w, r, err)
				return
			}
			defer release()
		}
	}
	if !a.ChatRates.Allow(visitor, a.Now().UTC()) {
		a.Fail(w, r, httpkit.ErrRateLimited)
		return
	}
	var in apiwire.MessageIn
	if err := httpkit.DecodeJSON(r, &in); err != nil {
		a.Fail(w, r, err)
		return
	}
	if a.Replies != nil {
		// The replies-at-once rule of AgentChat holds here too, per
		// owner: an account's (or token's) turns with its WebSocket ones;
		// anonymous callers share one owner, so their visitor is their
		// session, or without one the client (its IP, or IPv6 /64).
		key := owner
		if owner == chat.APIAnonymous {
			key = chat.APIAnonymous + chat.Owner("@"+visitor)
		}
		release, err := a.Replies.Hold(key)
		if err != nil {
			a.Fail(w, r, err)
			return
		}
		defer release()
	}
	var steps []agent.Step
	onStep := func(s agent.Step) {
		if s.Done {
			steps = append(steps, s)
		}
	}
	ctx := r.Context()
	if owner == chat.APIAnonymous {
		// Anonymous callers share an owner; each waits in a model's
		// queue as its own visitor.
		ctx = agent.WithCaller(ctx, string(chat.APIAnonymous)+"@"+visitor)
	}
	text, err := approvalText(in)
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	res, err := a.Chat.Turn(ctx, owner, chat.Request{AgentID: chi.URLParam(r, "id"), ConversationID: in.ConversationID, Text: text, OnStep: onStep,
		Quota: a.ChatRates.Quota(a.Now, visitor), Approval: in.Approval}, func(string) error { return nil })
	if err != nil {
		a.Fail(w, r, turnError(err, res))
		return
	}
	out := apiwire.MessageOut{ConversationID: res.Conversation.ID, MessageID: res.Reply.ID, Reply: res.Reply.Text, Steps: steps, NeedsInput: res.NeedsInput}
	if ap := res.Approval; ap != nil {
		out.Approval = &apiwire.PendingApproval{Approval: *ap, Answer: fmt.Sprintf(
			`POST this endpoint again with {"conversation_id": %q, "approval": {"id": %q, "approve": true}} to run the call, or "approve": false to deny it`,
			res.Conversation.ID, ap.ID)}
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// approvalText is the message a request stores: its text, or for an
// answer to an approval without one, the answer in a word.
func approvalText(in apiwire.MessageIn) (string, error) {
	ap := in.Approval
	if ap == nil {
		return in.Text, nil
	}
	if ap.ID == "" || len(ap.ID) > agent.MaxApprovalIDLen || in.ConversationID == "" {
		return "", &httpkit.Error{Status: http.StatusBadRequest, Code: string(agent.CodeInvalidInput),
			Message: `An approval answers the one a reply named: give its conversation_id and {"approval": {"id": "<approval.id>", "approve": true}}.`,
			Fields:  map[string]string{"approval.id": "is required, with conversation_id"}}
	}
	if strings.TrimSpace(in.Text) != "" {
		return in.Text, nil
	}
	if ap.Approve {
		return "Approve", nil
	}
	return "Deny", nil
}

// visitor is the budget key of an anonymous caller from address: the
// anonymous key of its portal session when it carries one the node
// issued (a cookie the node did not store loads an empty session, so a
// client cannot mint one), else its address.
func (a *API) visitor(r *http.Request, address string) string {
	if a.Sessions == nil {
		return "ip:" + address
	}
	c, err := r.Cookie(a.Sessions.Cookie.Name)
	if err != nil || c.Value == "" {
		return "ip:" + address
	}
	ctx, err := a.Sessions.Load(r.Context(), c.Value)
	if err != nil {
		return "ip:" + address
	}
	if o, ok := a.Sessions.ChatOwner(ctx); ok {
		return string(o)
	}
	return "ip:" + address
}

// turnError is the answer to a failed turn: when the message was stored,
// it names the conversation (fields.conversation_id), so a script can
// continue it.
func turnError(err error, res chat.Result) error {
	e := httpkit.Classify(err)
	if e.Fields != nil || res.Conversation.ID == "" {
		return e
	}
	return &httpkit.Error{Status: e.Status, Code: e.Code, Message: e.Message, Fields: map[string]string{"conversation_id": res.Conversation.ID}, RetryAfter: e.RetryAfter}
}

// owner is whose conversations a request of the message API may use: the
// bearer token's account, or without a token chat.APIAnonymous, whose
// conversation ids are the capability to use them. A token that does not
// verify is refused, never taken as anonymous.
func (a *API) owner(r *http.Request) (chat.Owner, error) {
	if r.Header.Get("Authorization") == "" {
		return chat.APIAnonymous, nil
	}
	p, err := a.Accounts.Bearer(r)
	if err != nil {
		return "", err
	}
	return p.Owner(), nil
}
