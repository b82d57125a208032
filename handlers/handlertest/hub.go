package handlertest

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/store"
)

// SeedRemote stores a listing as if another node (a fresh key) had
// announced it and the Sink had verified it: online, not local. It
// returns the listing, whose HostPeerID is that node's.
func (e *Env) SeedRemote(name, display, owner string) store.Listing {
	e.T.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		e.T.Fatalf("generate key: %v", err)
	}
	pid, err := peer.IDFromPrivateKey(key)
	if err != nil {
		e.T.Fatalf("peer id: %v", err)
	}
	now := time.Now()
	r := agent.Record{
		Name: name, DisplayName: display, Description: "A remote " + name, Tags: []string{"demo"},
		Version: "1.0.0", Owner: owner, Seq: 1, IssuedAt: now.Add(-time.Minute),
		Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: pid.String(), Protocol: agent.MCPProtocol}},
	}
	r.ExpiresAt = r.IssuedAt.Add(agent.DefaultTTL)
	env, err := agent.Seal(&r, key, now)
	if err != nil {
		e.T.Fatalf("seal %s: %v", name, err)
	}
	rec, err := agent.Open(env, now)
	if err != nil {
		e.T.Fatalf("open %s: %v", name, err)
	}
	l := store.Listing{Record: *rec, Envelope: env, Status: store.StatusOnline, LastSeen: now,
		HostPeerID: rec.HostPeerID(), UpdatedAt: now}
	if err := e.Store.UpsertRecord(context.Background(), l); err != nil {
		e.T.Fatalf("UpsertRecord(%s): %v", name, err)
	}
	return l
}

// NameNode gives peerID a node row named name, as its heartbeat would
// (store.Sink.NodeSeen writes the same row).
func (e *Env) NameNode(peerID, name string) {
	e.T.Helper()
	n := store.Node{PeerID: peerID, Name: name, Version: "test", LastHeartbeat: time.Now(), Status: store.StatusOnline}
	if err := e.Store.UpsertNode(context.Background(), n); err != nil {
		e.T.Fatalf("UpsertNode(%s): %v", peerID, err)
	}
}

// SeedRemoteCopy stores, as another node's, a listing with the same name,
// display name, description, tags and skills as l (the same agent on
// another node: the hub groups them), that node named nodeName.
func (e *Env) SeedRemoteCopy(l store.Listing, nodeName string) store.Listing {
	e.T.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		e.T.Fatalf("generate key: %v", err)
	}
	pid, err := peer.IDFromPrivateKey(key)
	if err != nil {
		e.T.Fatalf("peer id: %v", err)
	}
	now := time.Now()
	r := agent.Record{
		Name: l.Record.Name, DisplayName: l.Record.DisplayName, Description: l.Record.Description, Tags: l.Record.Tags,
		Skills: l.Record.Skills, Version: l.Record.Version, Seq: 1, IssuedAt: now.Add(-time.Minute),
		Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: pid.String(), Protocol: agent.MCPProtocol}},
	}
	r.ExpiresAt = r.IssuedAt.Add(agent.DefaultTTL)
	env, err := agent.Seal(&r, key, now)
	if err != nil {
		e.T.Fatalf("seal %s: %v", r.Name, err)
	}
	rec, err := agent.Open(env, now)
	if err != nil {
		e.T.Fatalf("open %s: %v", r.Name, err)
	}
	c := store.Listing{Record: *rec, Envelope: env, Status: store.StatusOnline, LastSeen: now, HostPeerID: rec.HostPeerID(), UpdatedAt: now}
	if err := e.Store.UpsertRecord(context.Background(), c); err != nil {
		e.T.Fatalf("UpsertRecord(%s): %v", r.Name, err)
	}
	e.NameNode(c.HostPeerID, nodeName)
	return c
}

// UseVerified rebuilds the server showing v's verified publishers, as a
// node with its verify.Claims does (cmd/agentsite).
func (e *Env) UseVerified(v handlers.Verified) {
	e.T.Helper()
	e.deps.Verified = v
	e.build()
}
