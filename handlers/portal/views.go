package portal

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// card converts a listing to the card the lists show; hosts labels its
// host (p.hostLabels).
func (p *Pages) card(l store.Listing, hosts map[string]store.NodeLabel) web.AgentCard {
	r := l.Record
	return web.AgentCard{
		ID:          r.ID,
		Name:        r.Name,
		DisplayName: r.DisplayName,
		Description: r.Description,
		Tags:        r.Tags,
		Version:     r.Version,
		Owner:       r.Owner,
		Publisher:   r.Publisher,
		Status:      l.Status,
		Local:       l.Local,
		LastSeen:    l.LastSeen,
		LastSeenAgo: web.Ago(l.LastSeen, p.now()),
		Health:      web.HealthOf(l.Health, p.now()),

		MixedScripts: agent.MixedScripts(r.DisplayName),
		Host:         p.hostView(l, hosts),
		Verified:     p.verifiedDomains(r.Publisher),
	}
}

// nodeLabels names nodes for people: the names their heartbeats carry,
// this node's from --node-name.
func (p *Pages) nodeLabels() *store.NodeLabels {
	return &store.NodeLabels{Nodes: p.Catalog, SelfID: p.Node.PeerID(), SelfName: p.NodeName}
}

// hostLabels labels the hosts of ls in two reads; a failed read leaves
// them named by their short peer ids (and is logged).
func (p *Pages) hostLabels(ctx context.Context, ls []store.Listing) map[string]store.NodeLabel {
	ids := make([]string, 0, len(ls))
	for _, l := range ls {
		ids = append(ids, hostOf(l, p.Node.PeerID()))
	}
	return p.labelsOf(ctx, ids)
}

func (p *Pages) labelsOf(ctx context.Context, peerIDs []string) map[string]store.NodeLabel {
	m, err := p.nodeLabels().Labels(ctx, peerIDs)
	if err != nil && ctx.Err() == nil {
		p.Logger.WarnContext(ctx, "reading node names failed", "err", err)
	}
	return m
}

// hostOf is the peer id of the node hosting l.
func hostOf(l store.Listing, self string) string {
	if l.Local {
		return self
	}
	return l.HostPeerID
}

// hostView names the node hosting l from hosts (p.hostLabels).
func (p *Pages) hostView(l store.Listing, hosts map[string]store.NodeLabel) web.HostView {
	id := hostOf(l, p.Node.PeerID())
	lbl, ok := hosts[id]
	if !ok {
		lbl = store.NodeLabel{PeerID: id, Short: store.ShortPeerID(id), Self: l.Local}
	}
	return hostViewOf(lbl)
}

func hostViewOf(l store.NodeLabel) web.HostView {
	if l.Name == "" && l.Self {
		return web.HostView{Name: "this node", Self: true, PeerID: l.PeerID}
	}
	if l.Name == "" {
		return web.HostView{Name: "node " + l.Short, Self: l.Self, PeerID: l.PeerID}
	}
	return web.HostView{Name: l.Name, Short: l.Short, Self: l.Self, PeerID: l.PeerID}
}

// cards converts a page of listings to cards, one card per group of
// listings that are the same agent on several nodes (sameAgent): the
// group's best copy (bestFirst) in the place of its first, with the count.
func (p *Pages) cards(ctx context.Context, ls []store.Listing) []web.AgentCard {
	hosts := p.hostLabels(ctx, ls)
	out := make([]web.AgentCard, 0, len(ls))
	for _, g := range groupListings(ls) {
		c := p.card(g[0], hosts)
		c.Nodes = len(g)
		out = append(out, c)
	}
	return out
}

// groupKey is what makes two listings the same agent to people: name,
// description and skills (their publishers differ: one name is one
// listing per node).
func groupKey(l store.Listing) string {
	skills := l.Record.Skills
	if len(skills) == 0 {
		skills = nil // none is none, however the record spells it
	}
	b, _ := json.Marshal([]any{l.Record.Name, l.Record.Description, skills})
	return string(b)
}

// groupListings groups ls by groupKey, in the order each group first
// appears, each group best first.
func groupListings(ls []store.Listing) [][]store.Listing {
	var groups [][]store.Listing
	at := map[string]int{}
	for _, l := range ls {
		k := groupKey(l)
		i, ok := at[k]
		if !ok {
			i = len(groups)
			at[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], l)
	}
	for _, g := range groups {
		slices.SortStableFunc(g, bestFirst)
	}
	return groups
}

// bestFirst orders copies of one agent: this node's first, then by
// liveness (online, stale, offline), then by health (healthy, unknown,
// degraded, failing), then the faster.
func bestFirst(a, b store.Listing) int {
	if a.Local != b.Local {
		if a.Local {
			return -1
		}
		return 1
	}
	if d := rank(statusRank, a.Status) - rank(statusRank, b.Status); d != 0 {
		return d
	}
	if d := rank(healthRank, a.Health.State) - rank(healthRank, b.Health.State); d != 0 {
		return d
	}
	la, lb := a.Health.LatencyMS, b.Health.LatencyMS
	if la > 0 && lb > 0 && la != lb {
		return la - lb
	}
	return 0
}

var (
	statusRank = []string{store.StatusOnline, store.StatusStale, store.StatusOffline}
	healthRank = []string{agent.HealthHealthy, agent.HealthUnknown, agent.HealthDegraded, agent.HealthFailing}
)

func rank(order []string, v string) int {
	if i := slices.Index(order, v); i >= 0 {
		return i
	}
	return len(order)
}

// otherHosts are the other nodes hosting the agent of l (its group,
// groupKey), found by a search for its name; best first.
func (p *Pages) otherHosts(ctx context.Context, l store.Listing) []web.OtherHost {
	page, err := p.Discover.Search(ctx, store.SearchQuery{Q: l.Record.Name, Limit: store.MaxLimit})
	if err != nil {
		if ctx.Err() == nil {
			p.Logger.WarnContext(ctx, "looking for other hosts failed", "agent", l.Record.ID, "err", err)
		}
		return nil
	}
	key := groupKey(l)
	var same []store.Listing
	for _, o := range page.Listings {
		if o.Record.ID != l.Record.ID && groupKey(o) == key {
			same = append(same, o)
		}
	}
	slices.SortStableFunc(same, bestFirst)
	hosts := p.hostLabels(ctx, same)
	out := make([]web.OtherHost, 0, len(same))
	for _, o := range same {
		out = append(out, web.OtherHost{ID: o.Record.ID, Host: p.hostView(o, hosts), Status: o.Status, Health: web.HealthOf(o.Health, p.now())})
	}
	return out
}

func tagCounts(tcs []store.TagCount) []web.TagCount {
	out := make([]web.TagCount, 0, len(tcs))
	for _, t := range tcs {
		out = append(out, web.TagCount{Tag: t.Tag, Count: t.Count})
	}
	return out
}

// listingHost names the node hosting l (the chat header uses it).
func (p *Pages) listingHost(ctx context.Context, l store.Listing) web.HostView {
	return p.hostView(l, p.hostLabels(ctx, []store.Listing{l}))
}
