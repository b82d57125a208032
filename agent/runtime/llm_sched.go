package runtime

import (
	"context"
	"errors"
	"net/url"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime/modelsched"
)

// scheduledRound is one completion round holding a slot of the model's
// endpoint (RuntimeOptions.Models) for as long as its answer streams: the
// slot is given back before the tools the model called run, so an agent
// that asks another agent of the same model never waits on itself. Every
// turn of an llm agent comes here (a person's, a delegated one, one another
// node sent), each as the caller its context names (agent.WithCaller).
func (r *Runtime) scheduledRound(ctx context.Context, endpoint string, b agent.Backend, t agent.Turn, in llmRequest, emit func(string) error) (llmRound, error) {
	if r.opts.Models == nil {
		return r.llmRound(ctx, endpoint, b, in, emit)
	}
	release, err := r.opts.Models.Acquire(ctx, modelsched.Request{
		Endpoint: endpointKey(endpoint), Caller: agent.CallerOf(ctx), Limit: b.Concurrency, OnWait: t.OnWait,
	})
	var busy *modelsched.BusyError
	if errors.As(err, &busy) {
		return llmRound{}, &BackendError{Kind: agent.ErrModelBusy, Backend: agent.BackendLLM, Public: busy.Error(), Err: err}
	}
	if err != nil {
		return llmRound{}, err
	}
	defer release()
	return r.llmRound(ctx, endpoint, b, in, emit)
}

// endpointKey names a model endpoint for the scheduler and its metrics:
// scheme, host and path, without credentials or query a URL may carry.
func endpointKey(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
