package chat_test

import (
	"context"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/store"
)

type oneListing store.Listing

func (l oneListing) Find(context.Context, string) (store.Listing, error) {
	return store.Listing(l), nil
}

type namedHosts map[string]string

func (n namedHosts) HostLabel(_ context.Context, l store.Listing) string { return n[l.HostPeerID] }

// TestDescribeNamesTheHost: the steps people see name a remote agent's
// node by the name its heartbeat carries ("asked Calculator on node-b"),
// the same label as the cards and the chat header, and fall back to the
// short peer id only without a labeler. Before node names, a step said
// "node goNzdr" while the reply said "node-b".
func TestDescribeNamesTheHost(t *testing.T) {
	const host = "12D3KooWHostOfTheCalculatorgoNzdr"
	l := oneListing(store.Listing{Record: agent.Record{ID: "calc", DisplayName: "Calculator"}, HostPeerID: host})
	named := &chat.Chat{Listings: l, Hosts: namedHosts{host: "node-b"}}
	if name, where := named.Describe(context.Background(), "calc"); name != "Calculator" || where != "node-b" {
		t.Errorf("Describe = %q on %q, want Calculator on node-b", name, where)
	}
	bare := &chat.Chat{Listings: l}
	if _, where := bare.Describe(context.Background(), "calc"); where != "node goNzdr" {
		t.Errorf("Describe without a labeler: on %q, want the short peer id", where)
	}
}
