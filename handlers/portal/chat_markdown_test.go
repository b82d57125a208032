package portal_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// TestChatPageMarkdown renders a stored agent reply as Markdown: bold,
// a highlighted code block, and a reply's script and javascript: link
// left inert. A user's message stays plain text.
func TestChatPageMarkdown(t *testing.T) {
	e := NewChat(t)
	echo := e.SeedEcho("echo-bot", "Echo Bot")
	e.Signup("dana", "password-dana-1")
	u, err := e.Store.GetUserByHandle(t.Context(), "dana")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	at := time.Now().Add(-time.Hour).UTC()
	if _, err := e.Store.CreateConversation(ctx, store.Conversation{ID: "cmd", AgentID: echo, OwnerKey: "user:" + strconv.FormatInt(u.ID, 10), Title: "md", CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	reply := "**bold** reply\n\n```go\nfunc main() {}\n```\n\n<script>alert(1)</script> [x](javascript:alert(1))"
	for i, m := range []store.Message{
		{Role: agent.RoleUser, Text: "**not rendered**"},
		{Role: agent.RoleAgent, Text: reply},
	} {
		m.ConversationID, m.CreatedAt = "cmd", at.Add(time.Duration(i)*time.Second)
		if _, err := e.Store.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}

	doc := e.Page("/chat/"+echo+"?c=cmd", http.StatusOK)
	CheckCSPClean(t, doc)
	msgs := MustTestid(t, doc, "message")
	user, bot := msgs.Eq(0), msgs.Eq(1)
	if user.Find("[data-testid=message-markdown], strong").Length() != 0 || Text(user.Find(".msg-text")) != "**not rendered**" {
		t.Error("a user's message is rendered as Markdown")
	}
	md := bot.Find("[data-testid=message-markdown]")
	if md.Length() != 1 {
		t.Fatalf("agent reply has %d rendered bodies, want 1", md.Length())
	}
	if got := Text(md.Find("strong")); got != "bold" {
		t.Errorf("strong = %q, want bold", got)
	}
	if md.Find(".code-block pre.chroma code.language-go span.kd").Length() != 1 {
		t.Error("the go code fence is not highlighted with classes")
	}
	if md.Find("script").Length() != 0 || md.Find("a").Length() != 0 {
		t.Error("the reply's script or javascript: link survived")
	}
	if !strings.Contains(md.Text(), "<script>alert(1)</script>") {
		t.Error("the reply's raw HTML is not shown as text")
	}
	// chat.js clones these to render a streamed reply and its code blocks.
	for _, name := range []string{"markdown", "code-copy"} {
		if doc.Find(`template[data-template="`+name+`"]`).Length() != 1 {
			t.Errorf("no %s template", name)
		}
	}
}
