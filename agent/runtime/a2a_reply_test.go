package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

func TestA2AReplyMerging(t *testing.T) {
	type step struct {
		op, src, text string
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  string
		sent  string
	}{
		{"appends", []step{{"add", "a", "Hel"}, {"add", "a", "lo"}}, "Hello", "Hello"},
		{"snapshot extends", []step{{"add", "a", "Hel"}, {"snap", "a", "Hello"}}, "Hello", "Hello"},
		{"snapshot repeats", []step{{"add", "a", "Hello"}, {"snap", "a", "Hello"}}, "Hello", "Hello"},
		{"snapshot replaces", []step{{"add", "a", "Hello"}, {"snap", "a", "Bye"}}, "Hello", "Hello"},
		{"two artifacts", []step{{"add", "a", "one"}, {"snap", "b", "two"}}, "one\ntwo", "one\ntwo"},
		{"final alone", []step{{"final", "", "done"}}, "done", "done"},
		{"final repeats", []step{{"add", "a", "Hello"}, {"final", "", "Hello"}}, "Hello", "Hello"},
		{"final extends", []step{{"add", "a", "Hel"}, {"final", "", "Hello"}}, "Hello", "Hello"},
		{"final remark dropped", []step{{"add", "a", "Hello"}, {"final", "", "Task done."}}, "Hello", "Hello"},
		{"status then artifact", []step{{"add", "status", "Looking it up."}, {"add", "a", "42"}}, "Looking it up.\n42", "Looking it up.\n42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent strings.Builder
			r := a2aReply{max: 100, sources: map[string]*strings.Builder{}, emit: func(s string) error { sent.WriteString(s); return nil }}
			for _, s := range tc.steps {
				var err error
				switch s.op {
				case "add":
					err = r.add(s.src, s.text)
				case "snap":
					err = r.snapshot(s.src, s.text)
				case "final":
					err = r.final(s.text)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if r.String() != tc.want || sent.String() != tc.sent {
				t.Fatalf("reply %q, emitted %q; want %q, %q", r.String(), sent.String(), tc.want, tc.sent)
			}
		})
	}
}

func TestReadSSEData(t *testing.T) {
	in := ": keep-alive\n\nid: 1\ndata: {\"a\":\ndata:1}\n\nevent: x\ndata: two\n\ndata: last"
	var got []string
	err := readSSEData(strings.NewReader(in), func(d []byte) error { got = append(got, string(d)); return nil })
	if err != nil || strings.Join(got, "|") != "{\"a\":\n1}|two|last" {
		t.Fatalf("events %q, %v", got, err)
	}
	long := "data: " + strings.Repeat("x", maxSSELine+1) + "\n\n"
	if err := readSSEData(strings.NewReader(long), func([]byte) error { return nil }); !errors.Is(err, agent.ErrReplyTooLarge) {
		t.Fatalf("a line over the limit: %v, want ErrReplyTooLarge", err)
	}
}
