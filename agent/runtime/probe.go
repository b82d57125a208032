package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// ProbeTimeout bounds one health probe (the runtime's turn timeout bounds
// it instead when that is shorter): a backend that needs longer than this
// to say it is up is not answering people either.
const ProbeTimeout = 10 * time.Second

// maxProbeBody bounds what is read of a probe's answer before the
// connection goes back to the pool (a model list is a few tens of KiB).
const maxProbeBody = 64 << 10

// ProbeResult is what one health probe of a backend found.
type ProbeResult struct {
	OK      bool
	Latency time.Duration
	// Err is why the probe failed (nil when OK): a *BackendError whose
	// public part (Message) tells the agent's owner what to fix, without
	// secrets. It is canceled when the caller's context ended first, which
	// says nothing about the backend.
	Err error
}

// Message is the probe's failure in words the agent's owner can act on
// ("connection refused at example.org:443", "401 from the model endpoint:
// check the key"); "" when the probe succeeded. It holds no key and no URL
// path (webhook URLs often carry a secret there), only host and port.
func (p ProbeResult) Message() string {
	if p.OK {
		return ""
	}
	if m := PublicMessage(p.Err); m != "" {
		return m
	}
	return "the probe failed"
}

// Outcome is the probe's class, a metric label: "ok", "canceled", or the
// stable code of the failure (agent_timeout, agent_unavailable,
// agent_rejected, agent_bad_reply, agent_reply_too_large,
// agent_misconfigured).
func (p ProbeResult) Outcome() string {
	switch e := agent.AsError(p.Err); {
	case p.OK:
		return "ok"
	case errors.Is(p.Err, context.Canceled):
		return string(agent.CodeCanceled)
	case e != nil:
		return string(e.Code)
	}
	return string(agent.CodeInternal)
}

// Probe checks that b answers, without sending it a message, through the
// guarded client and within ProbeTimeout:
//   - llm: GET {url}/models with the key; a 2xx is up.
//   - mcp: initialize (when the pool has no session yet) and tools/list,
//     which must still offer b.Tool.
//   - webhook: OPTIONS {url} with the key, a safe request that runs no
//     turn (RFC 9110 9.3.7). Any answer is up except 401, 403, 404, 410,
//     429 and 5xx other than 501 (a server without an OPTIONS handler
//     answers 400, 405 or 501, and is alive).
//   - a2a: the agent card is fetched afresh and must offer an endpoint this
//     node may call.
//   - builtin: always up.
func (r *Runtime) Probe(ctx context.Context, b agent.Backend) ProbeResult {
	limit := min(ProbeTimeout, r.opts.Timeout)
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(dl))
	}
	start := r.opts.Now()
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var err error
	switch b.Kind {
	case agent.BackendBuiltin:
	case agent.BackendLLM:
		err = r.probeLLM(pctx, b)
	case agent.BackendMCP:
		err = withMCPSession(pctx, b.APIKey, func(ctx context.Context) error { return r.probeMCPTool(ctx, b) })
	case agent.BackendWebhook:
		err = r.probeWebhook(pctx, b)
	case agent.BackendA2A:
		_, _, err = r.loadA2ACard(pctx, b.URL)
	case agent.BackendCatalogue:
		err = kindError(agent.ErrUnknownAgent, b.Kind, "not hosted: a catalogue listing has nothing to probe")
	default:
		err = kindError(agent.ErrUnknownAgent, b.Kind, fmt.Sprintf("this node has no %q backend", b.Kind))
	}
	res := ProbeResult{OK: err == nil, Latency: r.opts.Now().Sub(start)}
	if err != nil {
		res.Err = redact(r.explainProbe(ctx, pctx, b, err, limit), b.APIKey)
	}
	return res
}

// probeLLM lists the models: it needs the key, costs nothing, and every
// OpenAI-compatible server has it.
func (r *Runtime) probeLLM(ctx context.Context, b agent.Backend) error {
	u, err := modelsURL(b.URL)
	if err != nil {
		return err
	}
	resp, err := r.probeRequest(ctx, http.MethodGet, u, b)
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(agent.BackendLLM, resp, b.APIKey)
	}
	return nil
}

// probeWebhook sends OPTIONS to the webhook: see Probe for what counts as up.
func (r *Runtime) probeWebhook(ctx context.Context, b agent.Backend) error {
	resp, err := r.probeRequest(ctx, http.MethodOptions, b.URL, b)
	if err != nil {
		return err
	}
	defer drain(resp)
	switch code := resp.StatusCode; {
	case code == http.StatusNotImplemented:
		return nil
	case code >= 500, code == http.StatusUnauthorized, code == http.StatusForbidden, code == http.StatusNotFound,
		code == http.StatusGone, code == http.StatusTooManyRequests:
		return statusError(agent.BackendWebhook, resp, b.APIKey)
	}
	return nil
}

// probeMCPTool lists the tools on b's pooled session (dialled and
// initialized if there is none) and checks that b.Tool is still offered.
func (r *Runtime) probeMCPTool(ctx context.Context, b agent.Backend) error {
	c, release, err := r.mcp.acquire(ctx, b)
	if err != nil {
		return err
	}
	broken := true
	defer func() { release(broken) }()
	ok, err := c.hasTool(ctx, b.Tool)
	if err != nil {
		return err
	}
	broken = false
	if !ok {
		return kindError(agent.ErrBackendRejected, agent.BackendMCP, fmt.Sprintf("the MCP server no longer offers tool %q", b.Tool))
	}
	return nil
}

// probeRequest sends a bodiless request with b's key through the guarded
// client.
func (r *Runtime) probeRequest(ctx context.Context, method, u string, b agent.Backend) (*http.Response, error) {
	req, err := r.newRequest(ctx, method, u, "application/json", b.APIKey, nil)
	if err != nil {
		return nil, err
	}
	return r.client.Do(req)
}

// drain reads a little of the body so the connection can be reused, and
// closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
	resp.Body.Close()
}

// modelsURL is {base}/models for an llm backend's base URL (which may
// name the chat completions endpoint itself).
func modelsURL(base string) (string, error) {
	c, err := chatCompletionsURL(base)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(c)
	if err != nil {
		return "", errBadBackendURL
	}
	u.Path = strings.TrimSuffix(u.Path, "/chat/completions") + "/models"
	return u.String(), nil
}
