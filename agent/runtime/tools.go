package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// StepToolCall is the Step.Tool of a call to one of an llm agent's tool
// servers (agent.Backend.Tools).
const StepToolCall = "call_tool"

// Defaults of the tool bounds in RuntimeOptions.
const (
	DefaultToolCalls       = 8
	DefaultToolResultBytes = 16 << 10
	DefaultToolCallTimeout = 20 * time.Second
	DefaultToolTurnTimeout = 45 * time.Second
)

// Limits of what the model is offered.
const (
	// maxToolName is OpenAI's limit on a function name ([a-zA-Z0-9_-]).
	maxToolName = 64
	// maxSlug bounds the server part of a namespaced name, so that the
	// tool's own name keeps most of the 64 characters.
	maxSlug = 20
	// maxOfferedTools bounds the tools offered at one turn (OpenAI takes
	// 128; each costs the model's context).
	maxOfferedTools = 64
	// maxToolDescription and maxToolSchema bound what one tool adds to
	// the request; a tool whose schema is larger is not offered.
	maxToolDescription = 1 << 10
	maxToolSchema      = 16 << 10
	// maxFoldedArgs bounds the arguments a step shows.
	maxFoldedArgs = 512
	// agentToolName is the one tool of an agent listed as a tool server.
	agentToolName = "send_message"
)

// toolRef is what a namespaced tool name stands for.
type toolRef struct {
	server agent.ToolServer
	label  string // the server for people: URL host and path, or agent id
	name   string // the tool's own name at its server
	// annotations are the server's hints (read-only, destructive): what
	// an approval gate would read.
	annotations mcp.ToolAnnotation
	// memory marks the memory tools (memory.go).
	memory bool
}

// toolBox is an llm agent's tool servers during one turn: the tools
// offered to the model, and the calls made of them within the bounds.
type toolBox struct {
	r        *Runtime
	turn     agent.Turn
	tools    []llmTool
	refs     map[string]toolRef
	calls    int
	deadline time.Time
	// answers are the sender's answers to approvals, by tool call id
	// (approval.go).
	answers map[string]bool
}

// openToolBox lists the tools of b's tool servers for turn t, nil when
// it has none to offer. A server that cannot be listed is left out of
// this turn (logged); the others are offered.
func (r *Runtime) openToolBox(ctx context.Context, b agent.Backend, t agent.Turn) *toolBox {
	if len(b.Tools) == 0 && (!b.Memory || r.Memory == nil) {
		return nil
	}
	tb := &toolBox{r: r, turn: t, refs: map[string]toolRef{}, deadline: r.opts.Now().Add(r.opts.ToolTurnTimeout)}
	tb.offerMemory(b.Memory)
	lists := make([][]mcp.Tool, len(b.Tools))
	var wg sync.WaitGroup
	for i, s := range b.Tools {
		if s.URL == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lctx, cancel := context.WithTimeout(ctx, r.opts.ToolCallTimeout)
			defer cancel()
			tools, err := r.listServerTools(lctx, s)
			if err != nil {
				r.log.LogAttrs(ctx, slog.LevelInfo, "tool server not listed",
					slog.String("agent", t.AgentID), slog.String("server", serverLabel(s)),
					slog.String("err", sanitize(err.Error(), s.Secret)))
				return
			}
			lists[i] = tools
		}()
	}
	wg.Wait()
	slugs := map[string]bool{}
	for i, s := range b.Tools {
		if s.Agent != "" {
			if r.Delegator == nil {
				continue
			}
			name, host := r.Delegator.Describe(ctx, s.Agent)
			slug := uniqueSlug(slugify(name, "agent_"+s.Agent[:6]), slugs)
			desc := "Send a message to the agent " + orText(name, s.Agent)
			if host != "" {
				desc += " (on " + host + ")"
			}
			tb.offer(slug, agentToolName, desc+" and get its reply.",
				json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the message to send it"}},"required":["text"]}`),
				toolRef{server: s, label: s.Agent, name: agentToolName})
			continue
		}
		slug := uniqueSlug(urlSlug(s.URL), slugs)
		for _, tool := range lists[i] {
			schema, ok := toolSchema(tool)
			if !ok {
				continue
			}
			desc := bound(strings.TrimSpace(tool.Description), maxToolDescription)
			tb.offer(slug, tool.Name, desc, schema, toolRef{server: s, label: serverLabel(s), name: tool.Name, annotations: tool.Annotations})
		}
	}
	if len(tb.tools) == 0 {
		return nil
	}
	return tb
}

// offer adds one tool under its namespaced name.
func (tb *toolBox) offer(slug, name, desc string, schema json.RawMessage, ref toolRef) {
	if len(tb.tools) >= maxOfferedTools {
		return
	}
	full := toolName(slug, name)
	if _, taken := tb.refs[full]; taken {
		full = toolName(slug, name+"#"+fmt.Sprint(len(tb.tools)))
	}
	tb.refs[full] = ref
	if desc == "" {
		desc = name
	}
	tb.tools = append(tb.tools, llmTool{Type: "function", Function: llmFunction{
		Name: full, Description: desc + " (tool " + name + " of " + ref.label + ")", Parameters: schema,
	}})
}

// has reports a name this box offered.
func (tb *toolBox) has(name string) bool { _, ok := tb.refs[name]; return ok }

// left reports whether another call may still run this turn.
func (tb *toolBox) left() bool {
	return tb.calls < tb.r.opts.ToolCalls && tb.r.opts.Now().Before(tb.deadline)
}

// admit decides whether a call runs: it is the one place that does. A
// refusal's text is what the model reads; an *approvalNeeded ends the
// turn waiting for the sender (approval.go).
func (tb *toolBox) admit(_ context.Context, c llmToolCall, ref toolRef, args map[string]any) error {
	switch {
	case tb.calls >= tb.r.opts.ToolCalls:
		return fmt.Errorf("this turn's %d tool calls are spent; answer with what you have", tb.r.opts.ToolCalls)
	case !tb.r.opts.Now().Before(tb.deadline):
		return errors.New("this turn's time for tools is spent; answer with what you have")
	case needsApproval(ref):
		return tb.approvalGate(c, ref, args)
	}
	return nil
}

// run answers one call of a tool of the box with the text the model
// reads: the result, or why it failed or was refused. Only a cancelled
// turn, and a call that waits for approval (*approvalNeeded), is an
// error.
func (tb *toolBox) run(ctx context.Context, c llmToolCall) (string, error) {
	ref := tb.refs[c.Function.Name]
	args := map[string]any{}
	if a := strings.TrimSpace(c.Function.Arguments); a != "" && a != "null" {
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			return jsonText(map[string]string{"error": "the arguments must be a JSON object matching the tool's parameters"}), nil
		}
	}
	if err := tb.admit(ctx, c, ref, args); err != nil {
		var an *approvalNeeded
		if errors.As(err, &an) {
			return "", an
		}
		var un *unattended
		if errors.Is(err, errApprovalElsewhere) || errors.Is(err, errApprovalNoConversation) || errors.As(err, &un) {
			tb.step(agent.Step{Tool: StepToolCall, Name: ref.name, Server: ref.label, Text: foldArgs(args), Done: true, Error: err.Error()})
		}
		return jsonText(map[string]string{"error": err.Error(), "code": "refused"}), nil
	}
	tb.calls++
	step := agent.Step{Tool: StepToolCall, Name: ref.name, Server: ref.label, Text: foldArgs(args)}
	if ref.server.Agent != "" {
		text, _ := args["text"].(string)
		if strings.TrimSpace(text) == "" {
			return jsonText(map[string]string{"error": agentToolName + ` wants {"text": "..."}`}), nil
		}
		step = agent.Step{Tool: ToolAskAgent, AgentID: ref.server.Agent, Text: text}
		step.AgentName, step.Host = tb.r.Delegator.Describe(ctx, ref.server.Agent)
	}
	tb.step(step)
	start := tb.r.opts.Now()
	cctx, cancel := context.WithDeadline(ctx, minTime(start.Add(tb.r.opts.ToolCallTimeout), tb.deadline))
	result, failed, err := tb.call(cctx, ref, args)
	cancel()
	step.DurationMS = max(tb.r.opts.Now().Sub(start).Milliseconds(), 0)
	if err != nil && ctx.Err() != nil {
		return "", ctx.Err() // the turn itself is over
	}
	step.Done = true
	if err != nil {
		step.Error = tb.publicError(cctx, err)
		tb.step(step)
		tb.r.log.LogAttrs(ctx, slog.LevelInfo, "tool call failed",
			slog.String("agent", tb.turn.AgentID), slog.String("server", ref.label),
			slog.String("tool", ref.name), slog.String("err", sanitize(err.Error(), ref.server.Secret)))
		return jsonText(map[string]string{"error": step.Error}), nil
	}
	if ref.server.Agent != "" {
		step.Reply = result
		tb.step(step)
		return jsonText(map[string]string{"reply": tb.bound(result)}), nil
	}
	summary := sanitize(result, ref.server.Secret)
	if failed {
		step.Error = orText(summary, "the tool reported an error")
		tb.step(step)
		return jsonText(map[string]string{"error": result}), nil
	}
	step.Reply = summary
	tb.step(step)
	return result, nil
}

// call makes the call on its server: the result text (bounded), whether
// the tool reported a failure, or why the call could not be made.
func (tb *toolBox) call(ctx context.Context, ref toolRef, args map[string]any) (text string, failed bool, err error) {
	if ref.memory {
		return tb.callMemory(ctx, ref, args)
	}
	if ref.server.Agent != "" {
		trace, err := tb.turn.Trace.Pass(tb.turn.AgentID, ref.server.Agent)
		if err != nil {
			return "", false, err
		}
		text, _ := args["text"].(string)
		reply, err := tb.r.Delegator.AskAgent(ctx, trace, ref.server.Agent, text)
		if err != nil {
			return "", false, err
		}
		return reply, false, nil
	}
	var res *mcp.CallToolResult
	err = withMCPSession(ctx, ref.server.Secret, func(ctx context.Context) error {
		conn, release, err := tb.r.mcp.acquireServer(ctx, ref.server)
		if err != nil {
			return err
		}
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = ref.name, args
		res, err = conn.client.CallTool(ctx, req)
		var te *transport.Error
		release(err != nil && errors.As(err, &te)) // a JSON-RPC error leaves the session usable
		return err
	})
	if err != nil {
		return "", false, err
	}
	text = resultText(res)
	if secret := strings.TrimSpace(ref.server.Secret); secret != "" {
		text = strings.ReplaceAll(text, secret, "[redacted]") // a server that echoes it
	}
	return tb.bound(text), res.IsError, nil
}

// bound cuts a result to the per-call limit, saying so to the model.
func (tb *toolBox) bound(s string) string {
	n := tb.r.opts.ToolResultBytes
	if len(s) <= n {
		return s
	}
	return bound(s, n) + fmt.Sprintf("\n[truncated: the result was %d bytes; only the first %s are shown]", len(s), sizeText(n))
}

// publicError is a failed call as the step and the model read it.
func (tb *toolBox) publicError(cctx context.Context, err error) string {
	if errors.Is(cctx.Err(), context.DeadlineExceeded) || isNetTimeout(err) {
		return "no reply in time"
	}
	if e := agent.AsError(err); e != nil && e.Kind != agent.KindInternal {
		return e.Message
	}
	if msg := PublicMessage(err); msg != "" {
		return msg
	}
	return "the tool could not be called"
}

func (tb *toolBox) step(s agent.Step) {
	if tb.turn.OnStep != nil {
		tb.turn.OnStep(s)
	}
}

// listServerTools returns the tools of an MCP tool server, from the
// pooled session's cache while it is fresh.
func (r *Runtime) listServerTools(ctx context.Context, s agent.ToolServer) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	err := withMCPSession(ctx, s.Secret, func(ctx context.Context) error {
		conn, release, err := r.mcp.acquireServer(ctx, s)
		if err != nil {
			return err
		}
		tools, err = conn.allTools(ctx, mcpToolsTTL)
		release(err != nil)
		return err
	})
	return tools, err
}

// acquireServer returns an initialized client for a tool server, keyed by
// its URL and credentials like a backend's.
func (m *mcpClients) acquireServer(ctx context.Context, s agent.ToolServer) (*mcpConn, func(broken bool), error) {
	headers := map[string]string{}
	if strings.TrimSpace(s.Secret) != "" {
		headers[s.HeaderName()] = s.HeaderValue()
	}
	sum := sha256.Sum256([]byte(s.HeaderName() + "\x00" + s.Secret))
	key := "tools\x00" + s.URL + "\x00" + hex.EncodeToString(sum[:8])
	return m.pool.Acquire(ctx, key, func(ctx context.Context) (*mcpConn, error) { return m.dialHeaders(ctx, s.URL, headers) })
}

// resultText is a tool result as the model reads it: its text blocks, a
// note for each block of another kind, or its structured content.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch tc := c.(type) {
		case mcp.TextContent:
			parts = append(parts, tc.Text)
		case *mcp.TextContent:
			parts = append(parts, tc.Text)
		case mcp.ImageContent, *mcp.ImageContent:
			parts = append(parts, "[an image, not shown]")
		case mcp.AudioContent, *mcp.AudioContent:
			parts = append(parts, "[audio, not shown]")
		default:
			parts = append(parts, "[content not shown]")
		}
	}
	if res.StructuredContent != nil && (len(parts) == 0) {
		if j, err := json.Marshal(res.StructuredContent); err == nil {
			return string(j)
		}
	}
	return strings.Join(parts, "\n")
}

// toolSchema is a tool's input schema as a function's parameters: an
// object schema, within maxToolSchema.
func toolSchema(t mcp.Tool) (json.RawMessage, bool) {
	var raw []byte
	if len(t.RawInputSchema) > 0 {
		raw = t.RawInputSchema
	} else {
		s := t.InputSchema
		if s.Type == "" {
			s.Type = "object"
		}
		if s.Properties == nil {
			s.Properties = map[string]any{}
		}
		var err error
		if raw, err = json.Marshal(s); err != nil {
			return nil, false
		}
	}
	var probe struct {
		Type string `json:"type"`
	}
	if len(raw) > maxToolSchema || json.Unmarshal(raw, &probe) != nil || probe.Type != "object" {
		return nil, false
	}
	return raw, true
}

// toolName is slug__name within OpenAI's function-name rules: other
// characters become "_", and a name too long (or changed) keeps its
// start and gains a short digest of the original, so names stay unique.
func toolName(slug, name string) string {
	clean := nameChars(name)
	full := slug + "__" + clean
	if len(full) <= maxToolName && clean == name {
		return full
	}
	sum := sha256.Sum256([]byte(name))
	tag := "_" + hex.EncodeToString(sum[:3])
	room := maxToolName - len(slug) - 2 - len(tag)
	if len(clean) > room {
		clean = clean[:room]
	}
	return slug + "__" + clean + tag
}

// nameChars replaces what a function name may not hold with "_".
func nameChars(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// slugify is s lowered to [a-z0-9_] within maxSlug, or fallback when
// nothing is left of it.
func slugify(s, fallback string) string {
	var b strings.Builder
	under := false
	for _, c := range strings.ToLower(s) {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		switch {
		case ok:
			b.WriteRune(c)
			under = false
		case !under && b.Len() > 0:
			b.WriteByte('_')
			under = true
		}
		if b.Len() >= maxSlug {
			break
		}
	}
	out := strings.Trim(b.String(), "_")
	if len(out) > maxSlug {
		out = strings.Trim(out[:maxSlug], "_")
	}
	if out == "" {
		return slugify(fallback, "tools")
	}
	return out
}

// urlSlug names a server by its host: "mcp.example.com" → "mcp_example_com".
func urlSlug(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "tools"
	}
	return slugify(strings.TrimPrefix(u.Hostname(), "www."), "tools")
}

// uniqueSlug is slug, or slug_2, slug_3… when another server has it.
func uniqueSlug(slug string, used map[string]bool) string {
	out := slug
	for n := 2; used[out]; n++ {
		suffix := fmt.Sprintf("_%d", n)
		out = slug[:min(len(slug), maxSlug-len(suffix))] + suffix
	}
	used[out] = true
	return out
}

// serverLabel names a tool server for people and logs: host and path,
// never its secret.
func serverLabel(s agent.ToolServer) string {
	if s.Agent != "" {
		return s.Agent
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return "tool server"
	}
	return u.Host + u.EscapedPath()
}

// foldArgs is a call's arguments for a step: compact JSON, bounded.
func foldArgs(args map[string]any) string {
	if len(args) == 0 {
		return "{}"
	}
	b, err := json.Marshal(args)
	if err != nil {
		return ""
	}
	return bound(string(b), maxFoldedArgs)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func orText(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
