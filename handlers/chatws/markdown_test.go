package chatws_test

import (
	"strings"
	"testing"

	"github.com/agentsite/agentsite/handlers/chatws"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestChatWebSocketDoneHTML: the done frame carries the reply rendered
// from Markdown (sanitized), while chunks stay plain text.
func TestChatWebSocketDoneHTML(t *testing.T) {
	e := NewChat(t)
	id, v := onChatPage(t, e)
	c := v.MustDial()
	text := "**bold** <script>alert(1)</script> [x](javascript:alert(1))"
	chunks, done := Turn(t, c, chatws.In{AgentID: id, Text: text})
	if done.Type != chatws.TypeDone {
		t.Fatalf("final frame = %+v", done)
	}
	if got := strings.Join(chunks, ""); got != text {
		t.Errorf("chunks = %q, want the plain text", got)
	}
	if done.Text != text {
		t.Errorf("done text = %q", done.Text)
	}
	if !strings.Contains(done.HTML, "<strong>bold</strong>") {
		t.Errorf("done html = %q, want the bold rendered", done.HTML)
	}
	if strings.Contains(done.HTML, "<script") || strings.Contains(done.HTML, "javascript:") || strings.Contains(done.HTML, "<a") {
		t.Errorf("done html = %q is not inert", done.HTML)
	}
}

// TestChatWebSocketLiveMarkdown: a reply shows as Markdown while it
// streams. A chunk that finishes a line carries the reply so far
// rendered (its finished lines) and the unfinished line as its tail;
// what it renders is as inert as the done frame's.
func TestChatWebSocketLiveMarkdown(t *testing.T) {
	e := NewChat(t)
	id, v := onChatPage(t, e)
	c := v.MustDial()
	text := "# Title\nSome **bold** text\n<script>alert(1)</script>\n```go\nx := 1\n```\nthe end"
	if err := c.WriteJSON(chatws.In{Type: chatws.TypeMessage, AgentID: id, Text: text}); err != nil {
		t.Fatal(err)
	}
	var rendered []chatws.Out
	var got strings.Builder
	for {
		f := ReadFrame(t, c)
		if f.Type == chatws.TypeStarted {
			continue
		}
		if f.Type != chatws.TypeChunk {
			if f.Type != chatws.TypeDone {
				t.Fatalf("final frame = %+v", f)
			}
			break
		}
		got.WriteString(f.Text)
		if f.HTML != "" {
			rendered = append(rendered, f)
			// The rendering covers what came so far: its tail is the
			// end of the text streamed, after the last finished line.
			if !strings.HasSuffix(got.String(), f.Tail) {
				t.Errorf("tail %q is not the end of the text so far %q", f.Tail, got.String())
			}
		}
		if strings.Contains(f.HTML, "<script") || strings.Contains(f.HTML, "<h1>Title") && strings.Contains(f.Tail, "#") {
			t.Errorf("chunk frame %+v", f)
		}
	}
	if len(rendered) == 0 {
		t.Fatal("no chunk carried the reply rendered: it streams as raw Markdown")
	}
	if !strings.Contains(rendered[0].HTML, "<h1>Title</h1>") {
		t.Errorf("first rendering = %q, want the heading before the reply ends", rendered[0].HTML)
	}
}
