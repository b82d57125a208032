package portal

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// getListing finds the listing of the {id} URL parameter.
func (p *Pages) getListing(r *http.Request) (store.Listing, error) {
	return p.Registry.Find(r.Context(), chi.URLParam(r, "id"))
}

// PageAgent shows one listing, looked up in the network if the cache
// lacks it; its owner gets the edit and delete buttons.
func (p *Pages) PageAgent(w http.ResponseWriter, r *http.Request) {
	l, err := p.getListing(r)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	u := p.viewer(r)
	rec := l.Record
	v := web.AgentView{
		Page:        p.page(r, u, rec.DisplayName, "agents"),
		ID:          rec.ID,
		Name:        rec.Name,
		DisplayName: rec.DisplayName,
		Description: rec.Description,
		Tags:        rec.Tags,
		Skills:      rec.Skills,
		Version:     rec.Version,
		Publisher:   rec.Publisher,
		Owner:       rec.Owner,
		Endpoints:   rec.Endpoints,
		Seq:         rec.Seq,
		IssuedAt:    rec.IssuedAt,
		ExpiresAt:   rec.ExpiresAt,
		Status:      l.Status,
		LastSeen:    l.LastSeen,
		LastSeenAgo: web.Ago(l.LastSeen, p.now()),
		Health:      web.HealthOf(l.Health, p.now()),
		HostPeerID:  l.HostPeerID,
		Local:       l.Local,
		CanManage:   u != nil && httpkit.Principal{User: u}.Actor().CanManage(l),
		ChatURL:     web.ChatHref(rec.ID, ""),

		MixedScripts: agent.MixedScripts(rec.DisplayName),
		Host:         p.listingHost(r.Context(), l),
		Others:       p.otherHosts(r.Context(), l),
		Use:          useView(p.base(r), rec.ID),
		Verified:     p.verifiedDomains(rec.Publisher),
	}
	v.CardSigner, v.UpstreamSigner = p.cardSigners(r.Context(), l)
	if o := agent.OriginOf(l.Envelope, p.now()); o != nil && o.Install != "" {
		v.Install, v.ChatURL = o.Install, "" // a catalogue listing: never chattable
		v.ListedFrom = listedFrom(*o)
	}
	p.render(w, r, http.StatusOK, web.AgentPage(v))
}

// listedFrom names a catalogue listing's upstream: "the MCP Registry
// (io.github.user/files 1.2.0)", or the catalog's URL.
func listedFrom(o agent.Origin) string {
	where := o.Registry
	if where == agent.OriginMCPRegistry {
		where = "the MCP Registry"
	}
	if name := strings.TrimSpace(o.Name + " " + o.Version); name != "" {
		where += " (" + name + ")"
	}
	return where
}

// cardSigners are who signs l's A2A card here (this node, when it signs
// cards) and, for a local a2a backend, who signed the external agent's
// own card when it was registered.
func (p *Pages) cardSigners(ctx context.Context, l store.Listing) (here, upstream web.HostView) {
	self := p.Node.PeerID()
	ids := []string{self}
	var signer string
	if l.Local {
		if b, err := p.Catalog.GetBackend(ctx, l.Record.ID); err == nil && b.Kind == agent.BackendA2A {
			signer = b.CardSigner
		} else if err != nil && !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
			p.Logger.WarnContext(ctx, "reading the backend's card signer failed", "agent", l.Record.ID, "err", err)
		}
	}
	if signer != "" {
		ids = append(ids, signer)
	}
	if !p.SignsCards && signer == "" {
		return here, upstream
	}
	labels := p.labelsOf(ctx, ids)
	view := func(id string) web.HostView {
		lbl, ok := labels[id]
		if !ok {
			lbl = store.NodeLabel{PeerID: id, Short: store.ShortPeerID(id), Self: id == self}
		}
		return hostViewOf(lbl)
	}
	if p.SignsCards {
		here = view(self)
	}
	if signer != "" {
		upstream = view(signer)
	}
	return here, upstream
}

// base is the origin the "Use this agent" panel's URLs start with: the
// configured public URL, else the one this request came in on.
func (p *Pages) base(r *http.Request) string { return httpkit.Origin(r, p.PublicURL) }

// useView is what people copy to call agent id from outside the portal:
// the message API with curl, an MCP client config for this node's /mcp
// (mcphelp.go: the mcpServers file of Claude Code and Cursor, with the
// tool call that reaches the agent) and the A2A card.
func useView(base, id string) web.UseView {
	body, _ := json.Marshal(apiwire.MessageIn{Text: "Hello"})
	return web.UseView{
		Curl: "curl -X POST " + base + "/api/v1/agents/" + id + "/messages \\\n" +
			"  -H 'Content-Type: application/json' \\\n" +
			"  -d '" + string(body) + "'",
		MCPConfig: mcpClientConfig(base + "/mcp"), // mcphelp.go
		MCPTool:   mcpToolCall(id),
		MCPHelp:   "/mcp?agent=" + id, // ids are base32: nothing to escape
		CardURL:   base + "/a2a/" + id + "/agent-card.json",

		CursorLink: cursorInstall(base + "/mcp"),
		VSCodeLink: vscodeInstall(base + "/mcp"),
		ClaudeCode: claudeCodeAdd(base + "/mcp"),
	}
}
