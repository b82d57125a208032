package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent"
)

// Polling of a task that a send or a stream left unfinished.
const (
	a2aPollFirst = 200 * time.Millisecond
	a2aPollMax   = 2 * time.Second
	// a2aMaxResubscribes bounds the SubscribeToTask calls of one turn
	// whose stream dropped before its task ended; then it polls.
	a2aMaxResubscribes = 3
	// a2aCancelTimeout bounds the CancelTask sent for a turn that was
	// cancelled or timed out, so the remote agent stops working on it.
	a2aCancelTimeout = 3 * time.Second
)

// answerA2A sends the turn to a remote A2A agent found through its card,
// in A2A 1.0 (JSON-RPC or HTTP+JSON, as the card prefers) or 0.3
// (JSON-RPC): a streaming send when the card says it streams, else a
// blocking one. The remote agent keeps the history by contextId, so only
// the new text is sent, in the context the agent gave this conversation
// before; if that is unknown (a restart, the bound evicted it) or the
// agent refuses it, the turn starts a fresh context. A turn cancelled or
// out of time cancels its remote task.
func (r *Runtime) answerA2A(ctx context.Context, b agent.Backend, t agent.Turn, emit func(string) error) (string, error) {
	card, err := r.a2aCardFor(ctx, b)
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
		err = r.a2aExchange(ctx, card, b.APIKey, a2aMessage(t.Text, t.Trace, prev), st)
		if err != nil && ctx.Err() != nil && st.taskID != "" && !st.done {
			r.a2aCancelTask(ctx, card, b.APIKey, st.taskID)
		}
		// Refused before any event: the agent may have forgotten the context.
		if err != nil && known && st.taskID == "" && st.reply.empty() && a2aRefused(err) && ctx.Err() == nil {
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

// a2aRefused reports an agent refusing a call before running it: a
// JSON-RPC error other than a failure, or a 4xx other than 401, 403 and
// 429 (which say nothing of the context).
func a2aRefused(err error) bool {
	var rpcErr *rpcError
	if errors.As(err, &rpcErr) {
		return true
	}
	var be *BackendError
	if errors.As(err, &be) && be.Status >= 400 && be.Status < 500 {
		return be.Status != 401 && be.Status != 403 && be.Status != 429
	}
	return false
}

// a2aCancelTask asks the agent to cancel a task this turn gave up on, on a
// short context of its own (the turn's is done); the answer is not read
// beyond its status.
func (r *Runtime) a2aCancelTask(ctx context.Context, card a2aCard, apiKey string, id a2a.TaskID) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a2aCancelTimeout)
	defer cancel()
	resp, err := r.a2aCall(cctx, card, apiKey, opCancel, nil, id)
	if err != nil {
		r.log.DebugContext(ctx, "a2a cancel task", "task", string(id), "err", redact(err, apiKey).Error())
		return
	}
	resp.Body.Close()
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

// a2aExchange runs one attempt: the call, its events, SubscribeToTask when
// a stream ends or breaks before its task does, and polling until the task
// is done.
func (r *Runtime) a2aExchange(ctx context.Context, card a2aCard, apiKey string, msg *a2a.Message, st *a2aTurn) error {
	op := opSend
	if card.streaming {
		op = opStream
	}
	resp, err := r.a2aCall(ctx, card, apiKey, op, msg, "")
	if err != nil {
		return err
	}
	err = r.a2aRead(resp, card, op, st.event)
	for resubs := 0; !st.done; {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !errors.Is(err, errStreamBroke):
			return err
		case st.taskID == "" && err != nil:
			return err
		case st.taskID == "":
			return kindError(agent.ErrBadBackendReply, agent.BackendA2A, "the agent's answer ended before its task did")
		}
		if card.streaming && resubs < a2aMaxResubscribes {
			resubs++
			resp, serr := r.a2aCall(ctx, card, apiKey, opSubscribe, nil, st.taskID)
			if serr == nil {
				err = r.a2aRead(resp, card, opSubscribe, st.event)
				if err == nil || errors.Is(err, errStreamBroke) {
					continue
				}
			}
			// Refused (no resubscribe there, or the task ended meanwhile): poll.
		}
		return r.a2aPoll(ctx, card, apiKey, st)
	}
	return st.outcome()
}

// a2aPoll gets the task until it is done, backing off.
func (r *Runtime) a2aPoll(ctx context.Context, card a2aCard, apiKey string, st *a2aTurn) error {
	for delay := a2aPollFirst; !st.done; delay = min(2*delay, a2aPollMax) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		resp, err := r.a2aCall(ctx, card, apiKey, opGet, nil, st.taskID)
		if err != nil {
			return err
		}
		if err := r.a2aRead(resp, card, opGet, st.event); err != nil {
			return err
		}
	}
	return st.outcome()
}
