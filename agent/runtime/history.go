package runtime

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/agentsite/agentsite/agent"
)

// The history budget of llm agents (docs/agents.md, "History budget"):
// a conversation's history over it has its oldest turns folded into a
// running summary, which the model reads as a system message before the
// turns kept.
const (
	// DefaultHistoryTokens is RuntimeOptions.HistoryTokens' default
	// (--llm-history-tokens).
	DefaultHistoryTokens = 6000
	// DefaultSummaryCache is how many conversations' summaries are kept
	// (RuntimeOptions.SummaryCache), the least recently used going first.
	DefaultSummaryCache = 1024
	// bytesPerToken is the estimate of a token: ~4 bytes of text.
	bytesPerToken = 4
	// messageTokens is what one message's framing costs besides its text.
	messageTokens = 4
)

// summaryPrompt is the system prompt of the request that folds turns;
// %d is the length the summary is asked to keep to, in words.
const summaryPrompt = "You keep the memory of a conversation between a user and an assistant. " +
	"Summarise it for the assistant, who will read your summary instead of the messages: " +
	"keep the facts, names, numbers, decisions, what the user wants and what is still open; " +
	"drop pleasantries. Write plain sentences, at most %d words, nothing else."

// summaryPreamble goes before a summary in the request of a turn.
const summaryPreamble = "Summary of the earlier part of this conversation (its oldest messages, folded to fit the model's context):\n"

// foldEntry is a conversation's summary: of its messages up to the n
// whose digest is tail.
type foldEntry struct {
	tail    [sha256.Size]byte
	n       int
	summary string
}

// newSummaryCache is the bounded cache of summaries, per agent,
// conversation and caller.
func newSummaryCache(size int) *lru.Cache[string, foldEntry] {
	c, err := lru.New[string, foldEntry](size)
	if err != nil {
		panic(fmt.Sprintf("runtime: summary cache of size %d: %v", size, err)) // size is always > 0
	}
	return c
}

// historyBudget is b's own budget, else the node's.
func (r *Runtime) historyBudget(b agent.Backend) int {
	if b.HistoryTokens > 0 {
		return b.HistoryTokens
	}
	return r.opts.HistoryTokens
}

func messageCost(m llmMessage) int {
	return (len(m.Content)+bytesPerToken-1)/bytesPerToken + messageTokens
}

func historyCost(ms []llmMessage) int {
	n := 0
	for _, m := range ms {
		n += messageCost(m)
	}
	return n
}

// llmHistory is llmMessages within the history budget: when the history
// costs more, its oldest turns are folded into a summary (one completion
// request of b's model, cached per conversation so that later turns reuse
// it) and the summary goes before the turns kept. Should the summary
// fail, the oldest turns are cut instead.
func (r *Runtime) llmHistory(ctx context.Context, endpoint string, b agent.Backend, t agent.Turn) []llmMessage {
	ms := llmMessages(b, t)
	head := 0
	if ms[0].Role == "system" {
		head = 1
	}
	hist := ms[head : len(ms)-1]
	budget := r.historyBudget(b)
	if historyCost(hist) <= budget {
		return ms
	}
	summary, kept := r.fold(ctx, endpoint, b, t, hist, budget)
	out := make([]llmMessage, 0, head+len(kept)+2)
	out = append(out, ms[:head]...)
	if summary != "" {
		out = append(out, llmMessage{Role: "system", Content: summaryPreamble + summary})
	}
	out = append(out, kept...)
	return append(out, ms[len(ms)-1])
}

// fold returns the summary of hist's oldest messages and the messages
// kept after it. The summary cached for the conversation is reused while
// the messages after it fit; past that, it and the next messages are
// summarised again into one.
func (r *Runtime) fold(ctx context.Context, endpoint string, b agent.Backend, t agent.Turn, hist []llmMessage, budget int) (string, []llmMessage) {
	// The caller is part of the key: a turn another node sends names a
	// conversation id of its own choosing, and must never be given the
	// summary of a conversation held here under the same id.
	key := t.AgentID + "\x00" + t.ConversationID + "\x00" + agent.CallerOf(ctx)
	start, prior := 0, ""
	if t.ConversationID != "" {
		if e, ok := r.summaries.Get(key); ok {
			if p := foldedUpTo(hist, e); p > 0 {
				if rest := hist[p:]; historyCost(rest)+messageCost(llmMessage{Content: summaryPreamble + e.summary}) <= budget {
					return e.summary, rest
				}
				start, prior = p, e.summary
			}
		}
	}
	q := foldPoint(hist, start, budget/2)
	summary, err := r.summarise(ctx, endpoint, b, t, prior, hist[start:q], budget)
	if err != nil {
		if ctx.Err() == nil {
			r.log.LogAttrs(ctx, slog.LevelWarn, "history summary failed; the oldest turns are cut",
				slog.String("agent", t.AgentID), slog.String("conversation", t.ConversationID),
				slog.Int("cut", q-start), slog.String("err", sanitize(err.Error(), b.APIKey)))
		}
		return prior, hist[q:]
	}
	if t.ConversationID != "" {
		r.summaries.Add(key, newFoldEntry(hist[:q], summary))
	}
	return summary, hist[q:]
}

// foldPoint is where the kept messages start: the first after start
// from which they cost at most keep, moved on to a message of the user's
// so that the kept turns start with one; past start in any case.
func foldPoint(hist []llmMessage, start, keep int) int {
	q, cost := len(hist), 0
	for q > start+1 && cost+messageCost(hist[q-1]) <= keep {
		q--
		cost += messageCost(hist[q])
	}
	for q < len(hist) && hist[q].Role != "user" {
		q++
	}
	return q
}

// tailDigest is the digest of the messages that end a folded part.
func tailDigest(ms []llmMessage) [sha256.Size]byte {
	h := sha256.New()
	for _, m := range ms {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// foldTail is how many of the last folded messages name where a summary
// ends.
const foldTail = 2

func newFoldEntry(folded []llmMessage, summary string) foldEntry {
	n := min(foldTail, len(folded))
	return foldEntry{tail: tailDigest(folded[len(folded)-n:]), n: n, summary: summary}
}

// foldedUpTo is where e's summary ends in hist (the index of the first
// message after it), the latest place that matches; 0 when it is not
// there (the turns were edited, or have moved out of the history sent).
func foldedUpTo(hist []llmMessage, e foldEntry) int {
	for p := len(hist); p >= e.n && e.n > 0; p-- {
		if tailDigest(hist[p-e.n:p]) == e.tail {
			return p
		}
	}
	return 0
}

// summarise asks b's model, through the model scheduler like every
// request of the turn, for a summary of prior (the summary so far) and
// the messages folded now. Nothing of it streams to the caller.
func (r *Runtime) summarise(ctx context.Context, endpoint string, b agent.Backend, t agent.Turn, prior string, folded []llmMessage, budget int) (string, error) {
	summaryTokens := max(budget/4, 64)
	var in strings.Builder
	if prior != "" {
		in.WriteString("The summary so far:\n" + prior + "\n\nThe conversation after it:\n")
	}
	for _, m := range folded {
		who := "User"
		if m.Role == "assistant" {
			who = "Assistant"
		}
		in.WriteString(who + ": " + m.Content + "\n\n")
	}
	req := llmRequest{Model: b.Model, Stream: true, Messages: []llmMessage{
		{Role: "system", Content: fmt.Sprintf(summaryPrompt, summaryTokens*3/4)},
		// What one request may carry: twice the budget, the rest cut.
		{Role: "user", Content: bound(in.String(), 2*budget*bytesPerToken)},
	}}
	round, err := r.scheduledRound(ctx, endpoint, b, t, req, func(string) error { return nil })
	if err != nil {
		return "", err
	}
	text := strings.TrimSpace(round.Text)
	if text == "" {
		return "", kindError(agent.ErrBadBackendReply, agent.BackendLLM, "the model wrote no summary")
	}
	return bound(text, summaryTokens*bytesPerToken), nil
}
