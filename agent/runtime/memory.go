package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Memory keeps what llm agents with memory (agent.Backend.Memory) remember
// of people: facts per person (a portal account of this node) and agent
// (docs/agents.md, "Memory"). chat.Memories keeps them in the store.
type Memory interface {
	// Remember keeps fact for person with agentID and says how many older
	// facts were forgotten to make room.
	Remember(ctx context.Context, person int64, agentID, fact string) (forgotten int, err error)
	// Facts are person's facts with agentID, newest first.
	Facts(ctx context.Context, person int64, agentID string) ([]string, error)
}

// The memory tools and their bounds.
const (
	memoryRemember = "remember"
	memoryRecall   = "recall"
	// memoryLabel is the "server" of the memory tools in the steps people
	// see.
	memoryLabel = "memory"
	// MaxFactBytes bounds one fact (store.MaxMemoryFactBytes keeps it).
	MaxFactBytes = 1 << 10
	// maxRecalled bounds the facts one recall returns.
	maxRecalled = 20
)

// memoryTools are the tools offered to an llm agent with memory.
var memoryTools = []struct {
	name, desc string
	schema     json.RawMessage
}{
	{memoryRemember, "Remember one fact about the person you are talking with, for your later conversations with them " +
		"(their name, preferences, what they ask you to keep). One short fact per call, in your own words.",
		json.RawMessage(`{"type":"object","properties":{"fact":{"type":"string","description":"the fact, one short sentence"}},"required":["fact"]}`)},
	{memoryRecall, "Recall what you remembered about the person you are talking with in earlier conversations: " +
		"the facts with the words of query (of three letters or more), the best matches and the newest first; an empty query: the newest facts.",
		json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"words to look for"}}}`)},
}

// offerMemory offers the memory tools when b has memory and the node keeps
// it, first, so that no tool server's tools crowd them out.
func (tb *toolBox) offerMemory(hasMemory bool) {
	if !hasMemory || tb.r.Memory == nil {
		return
	}
	for _, m := range memoryTools {
		tb.refs[m.name] = toolRef{label: memoryLabel, name: m.name, memory: true}
		tb.tools = append(tb.tools, llmTool{Type: "function", Function: llmFunction{Name: m.name, Description: m.desc, Parameters: m.schema}})
	}
}

// errNoPerson is what the memory tools answer in a turn of no person of
// this node.
const errNoPerson = "there is no memory in this conversation: facts are kept only for people signed in to this node's portal " +
	"(not for anonymous visitors, other agents or people of other nodes); answer without it"

// callMemory runs remember or recall for the turn's person: the result
// the model reads, or why it failed (failed set), as toolBox.call.
func (tb *toolBox) callMemory(ctx context.Context, ref toolRef, args map[string]any) (string, bool, error) {
	person := tb.turn.Person
	if person <= 0 {
		return errNoPerson, true, nil
	}
	switch ref.name {
	case memoryRemember:
		fact, _ := args["fact"].(string)
		fact = strings.Join(strings.Fields(fact), " ")
		switch {
		case fact == "":
			return `remember wants {"fact": "..."}: the fact to keep`, true, nil
		case len(fact) > MaxFactBytes:
			return fmt.Sprintf("the fact is %d bytes; keep it to %d: one short sentence", len(fact), MaxFactBytes), true, nil
		}
		forgotten, err := tb.r.Memory.Remember(ctx, person, tb.turn.AgentID, fact)
		if err != nil {
			return "", false, fmt.Errorf("remember: %w", err)
		}
		out := map[string]any{"remembered": fact}
		if forgotten > 0 {
			out["forgotten"] = fmt.Sprintf("%d older facts were forgotten to make room", forgotten)
		}
		return jsonText(out), false, nil
	default: // recall
		query, _ := args["query"].(string)
		facts, err := tb.r.Memory.Facts(ctx, person, tb.turn.AgentID)
		if err != nil {
			return "", false, fmt.Errorf("recall: %w", err)
		}
		found := matchFacts(facts, query, maxRecalled)
		out := map[string]any{"facts": found}
		if len(found) == 0 {
			out["note"] = "nothing remembered matches"
		}
		return tb.bound(jsonText(out)), false, nil
	}
}

// minQueryWord is the shortest word of a query that is looked for:
// shorter ones ("a", "is") would match nearly every fact.
const minQueryWord = 3

// matchFacts are the facts (newest first) with any of query's words of
// minQueryWord letters or more, case-insensitively: those with the most
// of them first, the newest first among equals; at most limit. A query
// without such words matches every fact.
func matchFacts(facts []string, query string, limit int) []string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) {
		if utf8.RuneCountInString(w) >= minQueryWord && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	type hit struct {
		fact string
		n    int
	}
	var hits []hit
	for _, f := range facts {
		lf, n := strings.ToLower(f), 0
		for _, w := range words {
			if strings.Contains(lf, w) {
				n++
			}
		}
		if n > 0 || len(words) == 0 {
			hits = append(hits, hit{f, n})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return b.n - a.n })
	out := []string{}
	for _, h := range hits[:min(len(hits), limit)] {
		out = append(out, h.fact)
	}
	return out
}
