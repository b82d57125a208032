package agent

import "context"

// callerKey carries who a turn is for through a context.
type callerKey struct{}

// WithCaller names who asks for the turns run under ctx: the person or
// session chatting (a conversation owner), or the node that passed a turn
// on ("peer:<id>"). Shared resources take callers in turn by it (the model
// scheduler, agent/runtime/modelsched). It travels in the context, not in
// Turn, so the turns an agent delegates while answering count as the same
// caller's without every hop having to pass it on.
func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerOf is the caller WithCaller named for ctx, or "".
func CallerOf(ctx context.Context) string {
	c, _ := ctx.Value(callerKey{}).(string)
	return c
}
