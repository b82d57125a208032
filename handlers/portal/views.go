package portal

import (
	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// card converts a listing to the card the lists show.
func (p *Pages) card(l store.Listing) web.AgentCard {
	r := l.Record
	return web.AgentCard{
		ID:          r.ID,
		Name:        r.Name,
		DisplayName: r.DisplayName,
		Description: r.Description,
		Tags:        r.Tags,
		Version:     r.Version,
		Owner:       r.Owner,
		Status:      l.Status,
		Local:       l.Local,
		LastSeen:    l.LastSeen,
		LastSeenAgo: web.Ago(l.LastSeen, p.now()),
		Health:      web.HealthOf(l.Health, p.now()),

		MixedScripts: agent.MixedScripts(r.DisplayName),
		Host:         hostView(l),
	}
}

// hostView names the node hosting l, by the rule the chat steps use.
func hostView(l store.Listing) web.HostView {
	return web.HostView{Name: chat.HostName(l), PeerID: l.HostPeerID}
}

func (p *Pages) cards(ls []store.Listing) []web.AgentCard {
	out := make([]web.AgentCard, 0, len(ls))
	for _, l := range ls {
		out = append(out, p.card(l))
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
