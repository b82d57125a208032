package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/agentsite/agentsite/agent"
)

// webhookMessage is one message of a webhook request.
type webhookMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// webhookRequest is the JSON a webhook backend receives: the whole
// conversation, the new user message last.
type webhookRequest struct {
	Agent          string           `json:"agent"`
	ConversationID string           `json:"conversation_id"`
	Messages       []webhookMessage `json:"messages"`
}

// webhookReply is the JSON a webhook backend answers with.
type webhookReply struct {
	Reply *string `json:"reply"`
}

// webhookRawFactor bounds the JSON body relative to the reply: escaping can
// make one byte of text six of JSON (\u001f).
const webhookRawFactor = 6

func (r *Runtime) answerWebhook(ctx context.Context, b agent.Backend, t agent.Turn, emit func(string) error) (string, error) {
	msgs := make([]webhookMessage, 0, len(t.History)+1)
	for _, m := range t.History {
		if m.Role == agent.RoleUser || m.Role == agent.RoleAgent {
			msgs = append(msgs, webhookMessage{Role: m.Role, Text: m.Text})
		}
	}
	msgs = append(msgs, webhookMessage{Role: agent.RoleUser, Text: t.Text})
	resp, err := r.postJSON(ctx, agent.BackendWebhook, b.URL, "application/json", b.APIKey,
		webhookRequest{Agent: t.AgentID, ConversationID: t.ConversationID, Messages: msgs})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(newCapReader(resp.Body, int64(r.opts.MaxReplyBytes)*webhookRawFactor+4<<10, nil))
	if err != nil {
		if errors.Is(err, agent.ErrReplyTooLarge) {
			return "", r.tooLarge(agent.BackendWebhook)
		}
		return "", err
	}
	var rep webhookReply
	if err := json.Unmarshal(raw, &rep); err != nil {
		return "", kindError(agent.ErrBadBackendReply, agent.BackendWebhook, `the reply is not JSON with a "reply" text`)
	}
	if rep.Reply == nil {
		return "", kindError(agent.ErrBadBackendReply, agent.BackendWebhook, `the reply has no "reply" text`)
	}
	if len(*rep.Reply) > r.opts.MaxReplyBytes {
		return "", r.tooLarge(agent.BackendWebhook)
	}
	return *rep.Reply, emit(*rep.Reply)
}
