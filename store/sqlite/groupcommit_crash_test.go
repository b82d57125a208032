package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite"
)

// crashChildEnv names the database a child of
// TestGroupCommitSurvivesKill writes to.
const crashChildEnv = "AGENTSITE_TEST_GROUP_COMMIT_CHILD"

// TestGroupCommitSurvivesKill: a child process runs concurrent turns'
// writes (new conversations with their first message, then appends)
// through the group commit and prints each write as it is acknowledged;
// the test kills it with SIGKILL in the middle, reopens the database, and
// finds every acknowledged message there, in its conversation.
func TestGroupCommitSurvivesKill(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "agentsite.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestGroupCommitSurvivesKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Acknowledged messages, by conversation, in order.
	acked := map[string][]string{}
	const killAfter = 400
	lines, n := bufio.NewScanner(out), 0
	for lines.Scan() {
		conv, text, ok := strings.Cut(lines.Text(), "\t")
		if !ok {
			continue
		}
		acked[conv] = append(acked[conv], text)
		if n++; n == killAfter {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL: no Close, no flush
				t.Fatal(err)
			}
		}
	}
	_ = cmd.Wait()
	if n < killAfter {
		t.Fatalf("the child acknowledged only %d writes before it ended", n)
	}

	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	defer db.Close()
	for conv, texts := range acked {
		got, err := db.ListMessages(t.Context(), conv, store.MaxMessages)
		if err != nil {
			t.Fatalf("ListMessages(%s): %v", conv, err)
		}
		if len(got) < len(texts) {
			t.Errorf("%s: %d messages stored, %d acknowledged", conv, len(got), len(texts))
			continue
		}
		for i, want := range texts {
			if got[i].Text != want {
				t.Errorf("%s message %d = %q, acknowledged %q", conv, i, got[i].Text, want)
			}
		}
	}
}

// crashChild writes until it is killed: 16 concurrent "turns", each a new
// conversation with its first message and then appends, printing
// "conversation\ttext" once a write is acknowledged.
func crashChild(path string) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	ack := func(conv, text string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s\t%s\n", conv, text)
		_ = w.Flush()
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for c := 0; ; c++ {
				id := fmt.Sprintf("crash-%02d-%04d", g, c)
				now := time.Now().UTC()
				first := &store.Message{Role: "user", Text: id + " 0"}
				if _, _, err := db.StartConversation(ctx, store.Conversation{ID: id, AgentID: "agent", OwnerKey: "user:1", CreatedAt: now}, first); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				ack(id, first.Text)
				for i := 1; i < 8; i++ {
					text := fmt.Sprintf("%s %d", id, i)
					if _, err := db.AppendMessage(ctx, store.Message{ConversationID: id, Role: "agent", Text: text}); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(2)
					}
					ack(id, text)
				}
			}
		})
	}
	wg.Wait()
}
