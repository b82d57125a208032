package mcpserver

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

// searchAgents reads its arguments in the grammar of GET /api/v1/agents's
// query string (tags are its tag, status its status, health its health)
// and validates them the same way.
func (p *public) searchAgents(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	v := url.Values{}
	for _, key := range []string{"q", "cursor"} {
		s, ok := argString(args, key)
		if !ok {
			return nil, badArgs(key, "must be a string")
		}
		if s != "" {
			v.Set(key, s)
		}
	}
	for key, param := range map[string]string{"tags": "tag", "status": "status", "health": "health"} {
		vals, ok := argStrings(args[key])
		if !ok {
			return nil, badArgs(key, "must be a string or a list of strings")
		}
		for _, s := range vals {
			v.Add(param, s)
		}
	}
	if raw, ok := args["limit"]; ok && raw != nil {
		n, ok := argInt(raw)
		if !ok {
			return nil, badArgs("limit", "must be a whole number")
		}
		v.Set("limit", strconv.Itoa(n))
	}
	q, err := httpkit.ParseSearchQuery(v)
	if err != nil {
		return nil, httpkit.BadQuery(err)
	}
	switch only := args["verified"]; only {
	case nil, false:
	case true:
		if q.Publishers = p.s.verifiedPublishers(); len(q.Publishers) == 0 {
			return jsonResult(apiwire.AgentList{Agents: []apiwire.Agent{}})
		}
	default:
		return nil, badArgs("verified", "must be true or false")
	}
	page, err := p.s.Discover.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	out := apiwire.FromPage(page)
	for i := range out.Agents {
		out.Agents[i].VerifiedDomains = p.s.verifiedDomains(page.Listings[i].Record.Publisher)
	}
	return jsonResult(out)
}

// Verified is what the catalogue tools show of verified publishers: the
// domains each publisher proved, as this node checked them itself
// (agent/verify), as the API and the hub show them.
type Verified interface {
	Domains(publisher string) []string
	Publishers() []string
}

func (s *Server) verifiedDomains(publisher string) []string {
	if s.Verified == nil {
		return nil
	}
	return s.Verified.Domains(publisher)
}

func (s *Server) verifiedPublishers() []string {
	if s.Verified == nil {
		return nil
	}
	return s.Verified.Publishers()
}

// agentJSON is a listing as get_agent and agent://<id> answer it.
func (s *Server) agentJSON(l store.Listing) apiwire.Agent {
	a := apiwire.FromListing(l)
	a.VerifiedDomains = s.verifiedDomains(l.Record.Publisher)
	return a
}

func (p *public) getAgent(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, ok := argString(req.GetArguments(), "id")
	if !ok || id == "" {
		return nil, badArgs("id", "is required")
	}
	l, err := p.s.Registry.Find(ctx, id)
	if err != nil {
		return nil, err
	}
	return jsonResult(p.s.agentJSON(l))
}

// TagJSON is one entry of list_tags' {"tags": [...]}.
type TagJSON struct {
	Tag   string `json:"tag"`
	Count int    `json:"count"`
}

func (p *public) listTags(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	limit := defaultTagsLimit
	if raw, ok := req.GetArguments()["limit"]; ok && raw != nil {
		n, ok := argInt(raw)
		if !ok || n < 1 || n > maxTagsLimit {
			return nil, badArgs("limit", fmt.Sprintf("must be a number from 1 to %d", maxTagsLimit))
		}
		limit = n
	}
	tags, err := p.s.Catalog.ListTags(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]TagJSON, 0, len(tags))
	for _, t := range tags {
		out = append(out, TagJSON{Tag: t.Tag, Count: t.Count})
	}
	return jsonResult(map[string]any{"tags": out})
}

// readAgent serves agent://<id>.
func (p *public) readAgent(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	l, err := p.s.Registry.Find(ctx, strings.TrimPrefix(uri, "agent://"))
	if err != nil {
		if e := httpkit.Classify(err); e.Status < 500 {
			return nil, errors.New(e.Message)
		}
		p.s.Logger.ErrorContext(ctx, "MCP resource read failed", "uri", uri, "err", err)
		return nil, errors.New("the agent could not be read; try again later")
	}
	b, err := json.Marshal(p.s.agentJSON(l))
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
func (p *public) unrouteMissingAgent(ctx context.Context, _ any, req *mcp.ReadResourceRequest) {
	id, ok := agentIDOf(req.Params.URI)
	if !ok {
		return
	}
	if _, err := p.s.Registry.Find(ctx, id); errors.Is(err, registry.ErrNoAgent) || errors.Is(err, registry.ErrAgentGone) {
		req.Params.URI += " (no such agent)"
	}
}

// jsonResult returns v as structured content and as its JSON text.
func jsonResult(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(v, string(b)), nil
}

// argString reads an optional string argument; a non-string is an error.
func argString(args map[string]any, key string) (string, bool) {
	v, ok := args[key]
	if !ok || v == nil {
		return "", true
	}
	s, ok := v.(string)
	return strings.TrimSpace(s), ok
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
