package apiwire

import (
	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// FromListing is the API view of a listing, for every surface that sends
// one as JSON (the API, MCP tools and resources). Empty lists are sent as
// [] rather than null, so clients need not tell the two apart.
func FromListing(l store.Listing) Agent {
	r := l.Record
	tags, skills, eps := r.Tags, r.Skills, r.Endpoints
	if tags == nil {
		tags = []string{}
	}
	if skills == nil {
		skills = []agent.Skill{}
	}
	if eps == nil {
		eps = []agent.Endpoint{}
	}
	health := l.Health
	if health.State == "" {
		health.State = agent.HealthUnknown
	}
	return Agent{
		ID: r.ID, Name: r.Name, DisplayName: r.DisplayName, Description: r.Description,
		Tags: tags, Skills: skills, Version: r.Version, Publisher: r.Publisher, Owner: r.Owner,
		Endpoints: eps, Seq: r.Seq, IssuedAt: r.IssuedAt, ExpiresAt: r.ExpiresAt, Tombstone: r.Tombstone,
		Status: l.Status, LastSeen: l.LastSeen, HostPeerID: l.HostPeerID, Local: l.Local,
		Health: health,
	}
}

// FromPage is one page of a search as AgentList.
func FromPage(p store.SearchPage) AgentList {
	out := AgentList{Agents: make([]Agent, 0, len(p.Listings)), NextCursor: p.NextCursor}
	for _, l := range p.Listings {
		out.Agents = append(out.Agents, FromListing(l))
	}
	return out
}
