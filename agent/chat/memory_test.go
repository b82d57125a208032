package chat_test

import (
	"testing"

	"github.com/agentsite/agentsite/agent/chat"
)

// TestOwnerUserID: only an account's owner key names a person, whose
// memory an agent may keep.
func TestOwnerUserID(t *testing.T) {
	for _, tc := range []struct {
		owner chat.Owner
		id    int64
		ok    bool
	}{
		{chat.UserOwner(42), 42, true},
		{chat.AnonOwner("k"), 0, false},
		{chat.MCPOwner("s"), 0, false},
		{chat.OperatorOwner, 0, false},
		{chat.A2AAnonymous, 0, false},
		{chat.Owner("user:x"), 0, false},
		{chat.Owner("user:0"), 0, false},
	} {
		if id, ok := tc.owner.UserID(); id != tc.id && tc.ok || ok != tc.ok {
			t.Errorf("%q.UserID() = %d, %t; want %d, %t", tc.owner, id, ok, tc.id, tc.ok)
		}
	}
}
