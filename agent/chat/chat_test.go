package chat_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// backend fakes chat.Answerer and chat.Remote: it records what it was
// asked and answers with fn (by default it streams "Hel", "lo").
type backend struct {
	mu    sync.Mutex
	turns []agent.Turn
	hosts []string
	fn    func(ctx context.Context, emit func(string) error) (string, error)
}

func (b *backend) Answer(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	return b.Send(ctx, "", t, emit)
}

func (b *backend) Send(ctx context.Context, host string, t agent.Turn, emit func(string) error) (string, error) {
	b.mu.Lock()
	b.turns = append(b.turns, t)
	b.hosts = append(b.hosts, host)
	fn := b.fn
	b.mu.Unlock()
	if fn != nil {
		return fn(ctx, emit)
	}
	for _, c := range []string{"Hel", "lo"} {
		if err := emit(c); err != nil {
			return "", err
		}
	}
	return "Hello", nil
}

func (b *backend) calls() []agent.Turn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]agent.Turn(nil), b.turns...)
}

// node is a node's chat over its real registry and store.
type node struct {
	*registrytest.Env
	Chat          *chat.Chat
	local, remote *backend
}

func newNode(t *testing.T, st store.Store) *node {
	env := registrytest.New(t, st)
	n := &node{Env: env, local: &backend{}, remote: &backend{}}
	n.Chat = &chat.Chat{Store: st, Listings: env.Registry, Local: n.local, Remote: n.remote, Now: env.Clock.Now}
	return n
}

// register creates a local agent of owner ("": the operator's).
func (n *node) register(t *testing.T, owner, name string) store.Listing {
	t.Helper()
	l, err := n.Registry.Create(t.Context(), registry.Actor{Owner: owner, Operator: owner == ""}, registrytest.Input(name))
	if err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	return l
}

// turn runs a turn that must succeed and returns it with the chunks
// streamed.
func (n *node) turn(t *testing.T, owner chat.Owner, req chat.Request) (chat.Result, []string) {
	t.Helper()
	var chunks []string
	res, err := n.Chat.Turn(t.Context(), owner, req, func(c string) error {
		chunks = append(chunks, c)
		return nil
	})
	if err != nil {
		t.Fatalf("turn %q: %v", req.Text, err)
	}
	return res, chunks
}

func discard(string) error { return nil }

// messages is the stored conversation as "role: text" lines.
func messages(t *testing.T, st store.Store, convID string) []string {
	t.Helper()
	ms, err := st.ListMessages(t.Context(), convID, store.MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Role+": "+m.Text)
	}
	return out
}

func wantMessages(t *testing.T, st store.Store, convID string, want ...string) {
	t.Helper()
	if got := messages(t, st, convID); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("stored messages = %q, want %q", got, want)
	}
}

// wantNoConversations checks owner has no conversation stored.
func wantNoConversations(t *testing.T, st store.Store, owner chat.Owner) {
	t.Helper()
	if cs, err := st.ListConversations(t.Context(), string(owner), 10); err != nil || len(cs) != 0 {
		t.Errorf("conversations of %s = %d, %v; want none", owner, len(cs), err)
	}
}

// wantCode checks err is the domain error with code.
func wantCode(t *testing.T, err error, code agent.Code) *agent.Error {
	t.Helper()
	e := agent.AsError(err)
	if e == nil || e.Code != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
	return e
}

func TestTurn(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		n := newNode(t, st)
		l := n.register(t, "alice", "helper")
		owner := chat.UserOwner(7)

		res, chunks := n.turn(t, owner, chat.Request{AgentID: l.Record.ID, Text: "  hi there \n"})
		conv := res.Conversation
		if conv.ID == "" || conv.OwnerKey != "user:7" || conv.AgentID != l.Record.ID || conv.AgentOwner != "alice" ||
			conv.AgentPublisher != n.PeerID || conv.Title != "hi there" {
			t.Errorf("conversation = %+v; want user:7's with %s, bound to alice and %s, titled by the message", conv, l.Record.ID, n.PeerID)
		}
		if !res.Sent || res.Reply.Role != agent.RoleAgent || res.Reply.Text != "Hello" || res.Reply.ConversationID != conv.ID {
			t.Errorf("result sent %v reply %+v; want the stored reply Hello", res.Sent, res.Reply)
		}
		if strings.Join(chunks, "|") != "Hel|lo" {
			t.Errorf("chunks = %q, want Hel, lo", chunks)
		}
		wantMessages(t, st, conv.ID, "user: hi there", "agent: Hello")
		stored, err := st.GetConversation(t.Context(), conv.ID)
		if err != nil || stored.OwnerKey != "user:7" || stored.AgentOwner != "alice" {
			t.Errorf("stored conversation = %+v, %v", stored, err)
		}

		n.turn(t, owner, chat.Request{AgentID: l.Record.ID, ConversationID: conv.ID, Text: "and again"})
		turns := n.local.calls()
		if len(turns) != 2 || len(n.remote.calls()) != 0 {
			t.Fatalf("local answered %d turns, remote %d; want 2 and 0", len(turns), len(n.remote.calls()))
		}
		first, second := turns[0], turns[1]
		if first.AgentID != l.Record.ID || first.ConversationID != conv.ID || first.Text != "hi there" || first.Owner != "alice" || len(first.History) != 0 {
			t.Errorf("first turn = %+v; want the trimmed text for alice's agent, no history", first)
		}
		if fmt.Sprint(second.History) != "[{user hi there} {agent Hello}]" || second.Text != "and again" || second.Owner != "alice" {
			t.Errorf("second turn = %+v; want the first exchange as history", second)
		}
		wantMessages(t, st, conv.ID, "user: hi there", "agent: Hello", "user: and again", "agent: Hello")
	})
}

func TestTurnSendsRecentHistory(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		n := newNode(t, st)
		l := n.register(t, "", "talker")
		owner := chat.AnonOwner("k1")
		res, _ := n.turn(t, owner, chat.Request{AgentID: l.Record.ID, Text: "m0"})
		conv := res.Conversation.ID
		for i := 1; i <= 47; i++ {
			role := agent.RoleUser
			switch {
			case i == 45:
				role = agent.RoleError // kept in the conversation, never sent to the agent
			case i%2 == 1:
				role = agent.RoleAgent
			}
			if _, err := st.AppendMessage(t.Context(), store.Message{ConversationID: conv, Role: role, Text: fmt.Sprintf("m%d", i), CreatedAt: n.Clock.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		n.turn(t, owner, chat.Request{AgentID: l.Record.ID, ConversationID: conv, Text: "last"})

		// Stored: m0, Hello, m1..m47 (49); the turn sends the last 40 of
		// them, m8..m47, without the error m45.
		var want []string
		for i := 8; i <= 47; i++ {
			if i != 45 {
				want = append(want, fmt.Sprintf("m%d", i))
			}
		}
		turns := n.local.calls()
		var got []string
		for _, m := range turns[len(turns)-1].History {
			if m.Role == agent.RoleError {
				t.Errorf("an error message was sent as history: %+v", m)
			}
			got = append(got, m.Text)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("history = %q,\nwant %q", got, want)
		}
	})
}

func TestTurnRefusesBadText(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	l := n.register(t, "alice", "helper")
	owner := chat.UserOwner(1)
	res, _ := n.turn(t, owner, chat.Request{AgentID: l.Record.ID, Text: "hello"})
	conv := res.Conversation.ID

	cases := []struct {
		name, text string
		want       error
	}{
		{"empty", "", chat.ErrEmptyMessage},
		{"blank", " \n\t ", chat.ErrEmptyMessage},
		{"too long", strings.Repeat("a", chat.MaxMessageBytes+1), chat.ErrMessageTooLarge},
		{"invalid UTF-8", "caf\xe9", chat.ErrBadMessage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, id := range []string{conv, ""} {
				_, err := n.Chat.Turn(t.Context(), owner, chat.Request{AgentID: l.Record.ID, ConversationID: id, Text: tc.text}, discard)
				if !errors.Is(err, tc.want) || agent.AsError(err).Fields["text"] == "" {
					t.Errorf("conversation %q: err %v, want %v with a text field", id, err, tc.want)
				}
			}
		})
	}
	wantMessages(t, st, conv, "user: hello", "agent: Hello")
	if cs, _ := st.ListConversations(t.Context(), string(owner), 10); len(cs) != 1 {
		t.Errorf("conversations = %d, want only the first", len(cs))
	}
	if got := len(n.local.calls()); got != 1 {
		t.Errorf("the agent was asked %d times, want once", got)
	}

	// The limit is on the trimmed text, and it is inclusive.
	n.turn(t, owner, chat.Request{AgentID: l.Record.ID, ConversationID: conv, Text: "  " + strings.Repeat("a", chat.MaxMessageBytes) + "\n"})
}

func TestTurnUnknownAgent(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	gone := n.register(t, "alice", "gone")
	if err := n.Registry.Delete(t.Context(), registry.Actor{Owner: "alice"}, gone.Record.ID); err != nil {
		t.Fatal(err)
	}
	owner := chat.UserOwner(1)
	for _, id := range []string{"", "nope", strings.Repeat("a", agent.IDLen), gone.Record.ID} {
		_, err := n.Chat.Turn(t.Context(), owner, chat.Request{AgentID: id, Text: "hi"}, discard)
		if e := wantCode(t, err, agent.CodeUnknownAgent); e.Message != chat.ErrUnknownAgent.Message {
			t.Errorf("turn to %q: message %q, want %q", id, e.Message, chat.ErrUnknownAgent.Message)
		}
		if _, err := n.Chat.Agent(t.Context(), id); !errors.Is(err, chat.ErrUnknownAgent) {
			t.Errorf("Agent(%q): err %v, want ErrUnknownAgent", id, err)
		}
	}
	wantNoConversations(t, st, owner)
	if len(n.local.calls()) != 0 {
		t.Error("the runtime was asked")
	}
}

func TestTurnRemote(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	far := n.Remote(t, registrytest.Input("far"))
	owner := chat.MCPOwner("session-1")

	res, _ := n.turn(t, owner, chat.Request{AgentID: far.Record.ID, Text: "hi"})
	if !res.Sent || res.Conversation.AgentPublisher != far.Record.Publisher {
		t.Errorf("result = %+v; want sent, bound to the remote publisher", res)
	}
	if len(n.remote.hosts) != 1 || n.remote.hosts[0] != far.HostPeerID || len(n.local.calls()) != 0 {
		t.Fatalf("remote asked of hosts %q, local %d times; want %s once, local never", n.remote.hosts, len(n.local.calls()), far.HostPeerID)
	}

	if _, err := st.SetHostStatus(t.Context(), far.HostPeerID, store.StatusOffline, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{res.Conversation.ID, ""} {
		_, err := n.Chat.Turn(t.Context(), owner, chat.Request{AgentID: far.Record.ID, ConversationID: id, Text: "still there?"}, discard)
		if !errors.Is(err, chat.ErrAgentOffline) {
			t.Errorf("turn to an offline remote agent: err %v, want ErrAgentOffline", err)
		}
	}
	if len(n.remote.calls()) != 1 {
		t.Errorf("the offline host was asked")
	}
	wantMessages(t, st, res.Conversation.ID, "user: hi", "agent: Hello")
	if l, err := n.Chat.Agent(t.Context(), far.Record.ID); err != nil || l.Status != store.StatusOffline {
		t.Errorf("Agent of an offline agent = %s, %v; want it (its history stays readable)", l.Status, err)
	}
}

// This node answers for its own agents whatever its cache says of them.
func TestTurnLocalOfflineAnswers(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	l := n.register(t, "", "sleepy")
	if _, err := st.ExpireListings(t.Context(), time.Now().Add(2*registrytest.TTL)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetAgent(t.Context(), l.Record.ID); got.Status != store.StatusOffline {
		t.Fatalf("status = %s, want offline", got.Status)
	}
	n.turn(t, chat.OperatorOwner, chat.Request{AgentID: l.Record.ID, Text: "wake up"})
}

func TestTurnUnavailable(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	mine := n.register(t, "", "mine")
	far := n.Remote(t, registrytest.Input("far"))
	owner := chat.APIAnonymous
	convs := map[string]string{}
	for _, l := range []store.Listing{mine, far} {
		res, _ := n.turn(t, owner, chat.Request{AgentID: l.Record.ID, Text: "hi"})
		convs[l.Record.ID] = res.Conversation.ID
	}

	n.Chat.Local, n.Chat.Remote = nil, nil
	other := chat.AnonOwner("k2")
	for _, l := range []store.Listing{mine, far} {
		for _, req := range []struct {
			owner chat.Owner
			conv  string
		}{{owner, convs[l.Record.ID]}, {other, ""}} {
			_, err := n.Chat.Turn(t.Context(), req.owner, chat.Request{AgentID: l.Record.ID, ConversationID: req.conv, Text: "anyone?"}, discard)
			if !errors.Is(err, chat.ErrUnavailable) {
				t.Errorf("local %v: err %v, want ErrUnavailable", l.Local, err)
			}
		}
		wantMessages(t, st, convs[l.Record.ID], "user: hi", "agent: Hello")
	}
	wantNoConversations(t, st, other)
}

func TestConversationIsTheOwners(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	a := n.register(t, "alice", "first")
	b := n.register(t, "alice", "second")
	owner := chat.UserOwner(1)
	res, _ := n.turn(t, owner, chat.Request{AgentID: a.Record.ID, Text: "private"})
	conv := res.Conversation.ID

	if c, err := n.Chat.Conversation(t.Context(), owner, a.Record.ID, conv); err != nil || c.ID != conv {
		t.Fatalf("the owner's conversation: %+v, %v", c, err)
	}
	cases := []struct {
		name    string
		owner   chat.Owner
		agentID string
		id      string
	}{
		{"another user", chat.UserOwner(2), a.Record.ID, conv},
		{"an anonymous browser", chat.AnonOwner("k"), a.Record.ID, conv},
		{"no owner", "", a.Record.ID, conv},
		{"another agent", owner, b.Record.ID, conv},
		{"unknown id", owner, a.Record.ID, "cnosuchconversation"},
		{"overlong id", owner, a.Record.ID, conv + strings.Repeat("x", chat.MaxConversationIDLen)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := n.Chat.Conversation(t.Context(), tc.owner, tc.agentID, tc.id); !errors.Is(err, chat.ErrNoConversation) {
				t.Errorf("Conversation: err %v, want ErrNoConversation", err)
			}
			_, err := n.Chat.Turn(t.Context(), tc.owner, chat.Request{AgentID: tc.agentID, ConversationID: tc.id, Text: "let me in"}, discard)
			if !errors.Is(err, chat.ErrNoConversation) {
				t.Errorf("Turn: err %v, want ErrNoConversation", err)
			}
		})
	}
	wantMessages(t, st, conv, "user: private", "agent: Hello")
	if got := len(n.local.calls()); got != 1 {
		t.Errorf("the agent was asked %d times, want once", got)
	}
}

func TestTurnOwnerChanged(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		n := newNode(t, st)
		shop := n.register(t, "alice", "shop")
		owner := chat.UserOwner(1)
		res, _ := n.turn(t, owner, chat.Request{AgentID: shop.Record.ID, Text: "my address is secret"})

		// alice deletes the agent; the operator registers the name again:
		// same id, another party.
		if err := n.Registry.Delete(t.Context(), registry.Actor{Owner: "alice"}, shop.Record.ID); err != nil {
			t.Fatal(err)
		}
		n.register(t, "", "shop")

		_, err := n.Chat.Turn(t.Context(), owner, chat.Request{AgentID: shop.Record.ID, ConversationID: res.Conversation.ID, Text: "still there?"}, discard)
		if !errors.Is(err, agent.ErrOwnerChanged) {
			t.Fatalf("err = %v, want ErrOwnerChanged", err)
		}
		if got := len(n.local.calls()); got != 1 {
			t.Errorf("the new owner's agent was asked %d times, want never (only the first turn)", got)
		}
		wantMessages(t, st, res.Conversation.ID, "user: my address is secret", "agent: Hello")

		fresh, _ := n.turn(t, owner, chat.Request{AgentID: shop.Record.ID, Text: "hello, new shop"})
		if fresh.Conversation.AgentOwner != "" || fresh.Conversation.ID == res.Conversation.ID {
			t.Errorf("a new conversation = %+v; want one bound to the operator's agent", fresh.Conversation)
		}
		if h := n.local.calls()[1].History; len(h) != 0 {
			t.Errorf("the new conversation sent history %v", h)
		}
	})
}

func TestTurnFailureIsStored(t *testing.T) {
	failWith := func(partial string, err error) func(context.Context, func(string) error) (string, error) {
		return func(_ context.Context, emit func(string) error) (string, error) {
			if partial != "" {
				_ = emit(partial)
			}
			return partial, err
		}
	}
	cases := []struct {
		name    string
		remote  bool
		partial string
		err     error
		code    agent.Code
		sent    bool
	}{
		{"local timeout", false, "I was about to", fmt.Errorf("llm backend: %w", context.DeadlineExceeded), agent.CodeAgentTimeout, true},
		{"local backend down", false, "", errors.New("connection refused"), agent.CodeAgentUnavailable, true},
		{"blocked address", false, "", agent.ErrBlockedAddress, agent.CodeAgentMisconfigured, false},
		{"remote unreachable", true, "", errors.New("dial backoff"), agent.CodeHostUnreachable, false},
		{"remote busy", true, "", agent.ErrAgentBusy, agent.CodeAgentBusy, false},
		{"remote refused: owner changed", true, "", agent.ErrOwnerChanged, agent.CodeOwnerChanged, false},
		{"remote backend broke off", true, "half a", agent.ErrBackendUnavailable, agent.CodeAgentUnavailable, true},
	}
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	mine, far := n.register(t, "", "flaky"), n.Remote(t, registrytest.Input("flaky"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, be := mine, n.local
			if tc.remote {
				l, be = far, n.remote
			}
			be.fn = failWith(tc.partial, tc.err)
			var chunks []string
			res, err := n.Chat.Turn(t.Context(), chat.OperatorOwner, chat.Request{AgentID: l.Record.ID, Text: "do it"}, func(c string) error {
				chunks = append(chunks, c)
				return nil
			})
			e := wantCode(t, err, tc.code)
			if !errors.Is(err, tc.err) {
				t.Errorf("err %v does not keep its cause %v", err, tc.err)
			}
			if res.Conversation.ID == "" || res.Sent != tc.sent || res.Reply.ID != 0 {
				t.Errorf("result = %+v; want the conversation, sent %v, no reply", res, tc.sent)
			}
			want := []string{"user: do it"}
			if tc.partial != "" {
				want = append(want, "agent: "+tc.partial)
				if strings.Join(chunks, "") != tc.partial {
					t.Errorf("chunks = %q, want the partial reply streamed", chunks)
				}
			}
			wantMessages(t, st, res.Conversation.ID, append(want, "error: "+e.Message)...)
		})
	}
}

// The caller going away mid-turn must not lose what was said.
func TestTurnCanceledIsStored(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	l := n.register(t, "", "slow")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n.local.fn = func(ctx context.Context, emit func(string) error) (string, error) {
		_ = emit("first words")
		cancel()
		return "first words", ctx.Err()
	}
	res, err := n.Chat.Turn(ctx, chat.UserOwner(3), chat.Request{AgentID: l.Record.ID, Text: "tell me"}, discard)
	e := wantCode(t, err, agent.CodeCanceled)
	if !res.Sent || res.Conversation.ID == "" {
		t.Errorf("result = %+v; want sent, with its conversation", res)
	}
	wantMessages(t, st, res.Conversation.ID, "user: tell me", "agent: first words", "error: "+e.Message)
}

func TestConversationTitle(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	l := n.register(t, "", "titled")
	long := strings.Repeat("é", 70)
	cases := map[string]string{
		"hello":                  "hello",
		"first line\n\n  second": "first line second",
		long:                     strings.Repeat("é", 59) + "…",
	}
	for text, want := range cases {
		res, _ := n.turn(t, chat.OperatorOwner, chat.Request{AgentID: l.Record.ID, Text: text})
		if res.Conversation.Title != want {
			t.Errorf("title of %q = %q, want %q", text, res.Conversation.Title, want)
		}
	}
}

// An empty owner is no one: a conversation stored without an owner key
// cannot be continued, not even by a caller without one.
func TestConversationWithoutOwner(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	l := n.register(t, "", "orphans")
	now := n.Clock.Now()
	c, err := st.CreateConversation(t.Context(), store.Conversation{ID: "corphan", AgentID: l.Record.ID, AgentPublisher: n.PeerID, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Chat.Conversation(t.Context(), "", l.Record.ID, c.ID); !errors.Is(err, chat.ErrNoConversation) {
		t.Errorf("err = %v, want ErrNoConversation", err)
	}
	if _, err := n.Chat.Turn(t.Context(), "", chat.Request{AgentID: l.Record.ID, ConversationID: c.ID, Text: "hi"}, discard); !errors.Is(err, chat.ErrNoConversation) {
		t.Errorf("turn: err = %v, want ErrNoConversation", err)
	}
}
