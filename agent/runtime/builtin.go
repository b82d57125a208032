package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/agentsite/agentsite/agent"
)

// builtinFunc answers a turn without leaving the process.
type builtinFunc func(ctx context.Context, t agent.Turn, emit func(string) error) (string, error)

// builtins are the agents of Builtins, by name.
var builtins = map[string]builtinFunc{
	"echo":       answerEcho,
	"calculator": answerCalculator,
	"haiku":      answerHaiku,
}

// readsHistory reports whether backend b reads a turn's history: every
// backend does but the builtins that answer the message alone (echo,
// calculator, haiku; the conformance agent reads it).
func readsHistory(b agent.Backend) bool {
	if b.Kind != agent.BackendBuiltin {
		return true
	}
	_, alone := builtins[b.Builtin]
	return !alone
}

func (r *Runtime) answerBuiltin(ctx context.Context, b agent.Backend, t agent.Turn, emit func(string) error) (string, error) {
	f, ok := builtins[b.Builtin]
	if b.Builtin == "echo" && r.opts.EchoDelay > 0 {
		f = slowEcho(r.opts.EchoDelay)
	}
	if b.Builtin == agent.BuiltinConformance {
		f, ok = answerConformance, r.opts.Conformance
	}
	if !ok {
		return "", fmt.Errorf("%w: no builtin agent %q", agent.ErrUnknownAgent, b.Builtin)
	}
	if len(t.Text) > r.opts.MaxReplyBytes {
		return "", r.tooLarge(agent.BackendBuiltin)
	}
	return f(ctx, t, emit)
}

// answerEcho replies with exactly the text, word by word, so that streaming
// is visible in demos and tests.
func answerEcho(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	var out strings.Builder
	for _, w := range strings.SplitAfter(t.Text, " ") {
		if err := ctx.Err(); err != nil {
			return out.String(), err
		}
		if w == "" {
			continue
		}
		out.WriteString(w)
		if err := emit(w); err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
}

// slowEcho is answerEcho with a pause of d before each word.
func slowEcho(d time.Duration) builtinFunc {
	return func(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
		timer := time.NewTimer(d)
		defer timer.Stop()
		return answerEcho(ctx, t, func(w string) error {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
			}
			return emit(w)
		})
	}
}

// answerCalculator evaluates the text as arithmetic. Mistakes in the input
// get a friendly reply, not an error: the agent answered.
func answerCalculator(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	reply := calculatorReply(t.Text)
	if err := emit(reply); err != nil {
		return "", err
	}
	return reply, nil
}

// answerHaiku writes three short lines about the whole message, line by
// line: a dependency-free poet for the demo planet (it counts no
// syllables; it is a demo).
func answerHaiku(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	topic := haikuTopic(t.Text)
	lines := []string{
		topic + " in the dusk —\n",
		"a quiet answer settles\n",
		"like snow on the pond",
	}
	var out strings.Builder
	for _, l := range lines {
		if err := ctx.Err(); err != nil {
			return out.String(), err
		}
		out.WriteString(l)
		if err := emit(l); err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
}

// maxHaikuTopic bounds the words of a message a haiku's first line
// carries (runes): a long message is cut on a word boundary.
const maxHaikuTopic = 60

// haikuTopic is the message as a haiku's subject: all of its words, in
// lower case, on one line, without the question's closing punctuation
// ("The sea?" is "the sea"); "silence" for a message without letters or
// digits.
func haikuTopic(text string) string {
	topic := strings.ToLower(strings.Join(strings.Fields(text), " "))
	topic = strings.TrimRightFunc(topic, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	if strings.IndexFunc(topic, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return "silence"
	}
	if r := []rune(topic); len(r) > maxHaikuTopic {
		cut := string(r[:maxHaikuTopic])
		if i := strings.LastIndex(cut, " "); i > maxHaikuTopic/2 {
			cut = cut[:i]
		}
		topic = strings.TrimRightFunc(cut, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) }) + "…"
	}
	return topic
}
