package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent"
)

// Polling of a task that a message/send or a stream left unfinished.
const (
	a2aPollFirst = 200 * time.Millisecond
	a2aPollMax   = 2 * time.Second
)

// answerA2A sends the turn to a remote A2A agent (A2A 0.3, JSON-RPC
// binding) found through its card: message/stream when the card says it
// streams, else message/send. The remote agent keeps the history by
// contextId, so only the new text is sent, in the context the agent gave
// this conversation before; if that is unknown (a restart, the bound
// evicted it) or the agent refuses it, the turn starts a fresh context.
func (r *Runtime) answerA2A(ctx context.Context, b agent.Backend, t agent.Turn, emit func(string) error) (string, error) {
	card, err := r.a2aCardFor(ctx, b.URL)
	if err != nil {
		return "", err
	}
	key := ""
	if t.ConversationID != "" {
		key = b.URL + "\x00" + t.AgentID + "\x00" + t.ConversationID
	}
	prev, known := a2aContext{}, false
	if key != "" {
		prev, known = r.a2a.contexts.Get(key)
	}
	for {
		st := newA2ATurn(r.opts.MaxReplyBytes, emit)
		err = r.a2aExchange(ctx, card, a2aMessage(t.Text, t.Trace, prev), st)
		// Refused before any event: the agent may have forgotten the context.
		var rpcErr *rpcError
		if err != nil && known && st.taskID == "" && st.reply.empty() && errors.As(err, &rpcErr) && ctx.Err() == nil {
			r.a2a.contexts.Remove(key)
			prev, known = a2aContext{}, false
			continue
		}
		if key != "" && st.contextID != "" {
			c := a2aContext{contextID: st.contextID}
			if st.state == a2a.TaskStateInputRequired && err == nil {
				c.taskID = st.taskID
			}
			r.a2a.contexts.Add(key, c)
		}
		if err != nil && !errors.Is(err, agent.ErrBackendRejected) {
			r.a2a.cards.Remove(b.URL) // the agent may have moved: read its card again next turn
		}
		return st.reply.String(), err
	}
}

// a2aMessage is the user's message, in the conversation's remote context,
// carrying the delegation trace so an AgentSite on the other side keeps
// the hop limits. It carries none of the tree's budget: an A2A reply says
// nothing of what was spent, so an agent there may answer but not
// delegate further in this tree.
func a2aMessage(text string, trace agent.Trace, c a2aContext) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
	m.ContextID, m.TaskID = c.contextID, c.taskID
	if trace.ID != "" {
		sent, _ := trace.Handoff(0)
		m.Metadata = map[string]any{agent.TraceMetaKey: sent}
	}
	return m
}

// a2aExchange runs one attempt: the call, its events, and polling until
// the task is done.
func (r *Runtime) a2aExchange(ctx context.Context, card a2aCard, msg *a2a.Message, st *a2aTurn) error {
	params := &a2a.MessageSendParams{Message: msg}
	method := a2aMethodStream
	if !card.streaming {
		blocking := true
		params.Config = &a2a.MessageSendConfig{Blocking: &blocking}
		method = a2aMethodSend
	}
	resp, err := r.a2aPost(ctx, card.endpoint, method, params)
	if err != nil {
		return err
	}
	if err := r.readA2A(resp, st.event); err != nil {
		return err
	}
	for delay := a2aPollFirst; !st.done; delay = min(2*delay, a2aPollMax) {
		if st.taskID == "" {
			return kindError(agent.ErrBadBackendReply, agent.BackendA2A, "the agent's answer ended before its task did")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		resp, err := r.a2aPost(ctx, card.endpoint, a2aMethodGet, &a2a.TaskQueryParams{ID: st.taskID})
		if err != nil {
			return err
		}
		if err := r.readA2A(resp, st.event); err != nil {
			return err
		}
	}
	return st.outcome()
}
