package peermcp

import (
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// History left out. A caller sends an agent's turn with the conversation
// so far, as the contract says; but many agents (the builtins) answer the
// message alone, and encoding and decoding up to MaxHistory messages was
// the largest part of a cross-node turn's cost on both nodes after the
// transport (BENCHMARKS.md, "Chat turns across nodes"). So a host says, in
// each result's _meta, when the agent that answered does not read the
// history; its caller then leaves the history out of that agent's next
// turns (turnArgs.HistoryOmitted). If the agent changed and now reads
// it, the host refuses such a turn before answering anything
// (agent.ErrHistoryRequired) and the caller sends it again, whole.

// historyMetaKey is the result's _meta key a host sets to historyUnread
// when the agent that answered did not read the history.
const historyMetaKey = "agentsite/history"

// historyUnreadValue is historyMetaKey's one value.
const historyUnreadValue = "unread"

// historyUnread reports whether the host said the agent does not read the
// history.
func historyUnread(res *mcp.CallToolResult) bool {
	if res == nil || res.Meta == nil {
		return false
	}
	switch v := res.Meta.AdditionalFields[historyMetaKey].(type) {
	case string: // decoded by mcp-go's client
		return v == historyUnreadValue
	case json.RawMessage: // by decodeResult
		return string(v) == `"`+historyUnreadValue+`"`
	}
	return false
}

// maxUnreadAgents bounds the agents a client remembers as not reading
// their history: when full it forgets them all, and their next turns
// carry the history again.
const maxUnreadAgents = 4096

// unreadAgents is the set of agents (host and id) whose host said they do
// not read the history. The zero value is empty and ready.
type unreadAgents struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

func (u *unreadAgents) has(key string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.keys[key]
	return ok
}

// set remembers key as not reading the history if unread, else forgets it.
func (u *unreadAgents) set(key string, unread bool) {
	if !unread {
		u.forget(key)
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.keys[key]; ok {
		return
	}
	if u.keys == nil || len(u.keys) >= maxUnreadAgents {
		u.keys = make(map[string]struct{})
	}
	u.keys[key] = struct{}{}
}

func (u *unreadAgents) forget(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.keys, key)
}
