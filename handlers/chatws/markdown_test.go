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
