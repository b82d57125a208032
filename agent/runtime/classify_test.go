package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

// TestClassifyTellsBadReplyFromTooLarge: a malformed reply must not be
// reported as one over the size limit, nor the other way round
// (errors.Is matches agent.Errors by code, and the two once shared one).
func TestClassifyTellsBadReplyFromTooLarge(t *testing.T) {
	rt := NewRuntime(nil, RuntimeOptions{})
	defer rt.Close()
	ctx := context.Background()
	b := agent.Backend{Kind: agent.BackendLLM}
	for _, tc := range []struct {
		err    error
		public string
	}{
		{fmt.Errorf("%w: stream event is not JSON", agent.ErrBadBackendReply), "the backend's reply could not be read"},
		{errTooManyRedirects, "the backend's reply could not be read"},
		{fmt.Errorf("%w: more than 10 bytes", agent.ErrReplyTooLarge), "the reply exceeds 64 KiB"},
	} {
		got := rt.classify(ctx, ctx, b, tc.err)
		if PublicMessage(got) != tc.public || !errors.Is(got, tc.err) {
			t.Errorf("classify(%v) = %v (public %q), want %q", tc.err, got, PublicMessage(got), tc.public)
		}
	}
}
