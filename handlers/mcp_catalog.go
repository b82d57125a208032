package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// The read-only side of the public MCP server: the catalogue as tools and
// resources, with the same validation and outcomes as the JSON API.

// list_tags page size.
const (
	defaultTagsLimit = 50
	maxTagsLimit     = 500
)

func (p *mcpPublic) searchAgents(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	v := url.Values{}
	for _, key := range []string{"q", "cursor"} {
		s, ok := argString(args, key)
		if !ok {
			return badArgs(key, "must be a string"), nil
		}
		if s != "" {
			v.Set(key, s)
		}
	}
	for key, param := range map[string]string{"tags": "tag", "status": "status"} {
		vals, ok := argStrings(args[key])
		if !ok {
			return badArgs(key, "must be a string or a list of strings"), nil
		}
		for _, s := range vals {
			v.Add(param, s)
		}
	}
	if raw, ok := args["limit"]; ok && raw != nil {
		n, ok := argInt(raw)
		if !ok {
			return badArgs("limit", "must be a whole number"), nil
		}
		v.Set("limit", strconv.Itoa(n))
	}
	// The same validation as GET /api/v1/agents.
	q, err := httpkit.ParseSearchQuery(v)
	if err != nil {
		return toolError(httpkit.Classify(httpkit.BadQuery(err)), ""), nil
	}
	page, err := p.s.Store.SearchAgents(ctx, q)
	if err != nil {
		return p.internal(ctx, "search_agents", err), nil
	}
	return jsonResult(apiwire.FromPage(page))
}

func (p *mcpPublic) getAgent(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, ok := argString(req.GetArguments(), "id")
	if !ok || id == "" {
		return badArgs("id", "is required"), nil
	}
	l, err := p.listing(ctx, id)
	if err != nil {
		return p.internal(ctx, "get_agent", err), nil
	}
	return jsonResult(apiwire.FromListing(l))
}

type tagJSON struct {
	Tag   string `json:"tag"`
	Count int    `json:"count"`
}

func (p *mcpPublic) listTags(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	limit := defaultTagsLimit
	if raw, ok := req.GetArguments()["limit"]; ok && raw != nil {
		n, ok := argInt(raw)
		if !ok || n < 1 || n > maxTagsLimit {
			return badArgs("limit", fmt.Sprintf("must be a number from 1 to %d", maxTagsLimit)), nil
		}
		limit = n
	}
	tags, err := p.s.Store.ListTags(ctx, limit)
	if err != nil {
		return p.internal(ctx, "list_tags", err), nil
	}
	out := make([]tagJSON, 0, len(tags))
	for _, t := range tags {
		out = append(out, tagJSON{Tag: t.Tag, Count: t.Count})
	}
	return jsonResult(map[string]any{"tags": out})
}

// readAgent serves agent://<id>.
func (p *mcpPublic) readAgent(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	l, err := p.listing(ctx, strings.TrimPrefix(uri, "agent://"))
	if err != nil {
		if e := httpkit.Classify(err); e.Status < 500 {
			return nil, errors.New(e.Message)
		}
		p.s.Logger.ErrorContext(ctx, "MCP resource read failed", "uri", uri, "err", err)
		return nil, errors.New("the agent could not be read; try again later")
	}
	b, err := json.Marshal(apiwire.FromListing(l))
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// unrouteMissingAgent runs before resources/read. Mcp-go reports every
// error of a resource handler as -32603 (internal error); only a URI that
// no handler matches gets the resource-not-found code (-32002, or -32602
// from protocol 2026-07-28 on, SEP-2164). So an agent:// URI naming no
// agent is made one that agent://{id} cannot match (a space never does),
// keeping the URI readable in the error message. An agent that is there
// is loaded again by readAgent, from the store's cache.
func (p *mcpPublic) unrouteMissingAgent(ctx context.Context, _ any, req *mcp.ReadResourceRequest) {
	id, ok := strings.CutPrefix(req.Params.URI, "agent://")
	if !ok {
		return
	}
	if _, err := p.listing(ctx, id); errors.Is(err, registry.ErrNoAgent) || errors.Is(err, registry.ErrAgentGone) {
		req.Params.URI += " (no such agent)"
	}
}

// listing finds an agent with the same outcomes as GET /api/v1/agents/{id}.
func (p *mcpPublic) listing(ctx context.Context, id string) (store.Listing, error) {
	return p.s.Registry.Find(ctx, id)
}

// internal returns the tool error of err, and logs it if it was
// unexpected (its text is never shown).
func (p *mcpPublic) internal(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	e := httpkit.Classify(err)
	if e.Status >= 500 {
		p.s.Logger.ErrorContext(ctx, "MCP tool failed", "tool", tool, "err", err)
	}
	return toolError(e, "")
}

// jsonResult returns v as structured content and as its JSON text.
func jsonResult(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(v, string(b)), nil
}

// argStrings reads a string or a list of strings.
func argStrings(v any) ([]string, bool) {
	switch x := v.(type) {
	case nil:
		return nil, true
	case string:
		return []string{x}, true
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// argInt reads a whole number (JSON numbers arrive as float64).
func argInt(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		if x != float64(int(x)) {
			return 0, false
		}
		return int(x), true
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}
