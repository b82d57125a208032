package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/apiwire"
)

// The demo and the load tool read the API through apiwire, so apiwire must
// be what a real node sends, field for field: every answer decodes with
// unknown fields refused, and encodes back to the same JSON (so no field
// of apiwire is misnamed or missing from the node's answer). The request
// shapes are sent in full to a node that refuses unknown fields.
func TestDemoWireTypesMatchTheAPI(t *testing.T) {
	n := startClusterNode(t, nodeOpts{demo: true})
	wire := func(method, path string, body any, wantStatus int, v any) {
		t.Helper()
		code, raw := n.api(method, path, body)
		if code != wantStatus {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, raw, wantStatus)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, raw)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var sent, back any
		_ = json.Unmarshal(raw, &sent)
		_ = json.Unmarshal(again, &back)
		if !reflect.DeepEqual(sent, back) {
			t.Errorf("%s %s: %T loses or renames fields:\nnode:    %s\napiwire: %s", method, path, v, bytes.TrimSpace(raw), again)
		}
	}

	var node apiwire.Node
	wire("GET", "/api/v1/node", nil, http.StatusOK, &node)
	if node.PeerID != n.peerID() || len(node.Addrs) == 0 {
		t.Errorf("node = %+v", node)
	}

	in := apiwire.AgentInput{
		Name: "wire", DisplayName: "Wire", Description: "Pins the API's JSON shapes.",
		Tags: []string{"wire", "test"}, Version: "1.2.3",
		Skills:  []agent.Skill{{ID: "echo", Name: "Echo", Description: "Repeats.", Examples: []string{"hi"}}},
		Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
	}
	var a apiwire.Agent
	wire("POST", "/api/v1/agents", in, http.StatusCreated, &a)
	if a.Name != in.Name || !a.Local || len(a.Endpoints) == 0 || len(a.Skills) != 1 || !agent.IsHealthState(a.Health.State) {
		t.Errorf("registered agent = %+v", a)
	}
	in.Description = "Pins the API's JSON shapes, again."
	wire("PUT", "/api/v1/agents/"+a.ID, in, http.StatusOK, &a)
	wire("GET", "/api/v1/agents/"+a.ID, nil, http.StatusOK, &a)
	var list apiwire.AgentList
	wire("GET", "/api/v1/agents?status=all&limit=2", nil, http.StatusOK, &list)
	if len(list.Agents) != 2 || list.NextCursor == "" {
		t.Errorf("first page of 2 = %d agents, next %q", len(list.Agents), list.NextCursor)
	}

	var out apiwire.MessageOut
	wire("POST", "/api/v1/agents/"+a.ID+"/messages", apiwire.MessageIn{Text: "hello"}, http.StatusOK, &out)
	wire("POST", "/api/v1/agents/"+a.ID+"/messages", apiwire.MessageIn{Text: "again", ConversationID: out.ConversationID}, http.StatusOK, &out)
	if out.Reply != "again" || out.MessageID == 0 {
		t.Errorf("message answer = %+v", out)
	}

	var e apiwire.ErrorBody
	bad := in
	bad.Name = "Not A Name!"
	wire("POST", "/api/v1/agents", bad, http.StatusUnprocessableEntity, &e)
	if e.Error.Code == "" || e.Error.Message == "" || e.Error.Fields["name"] == "" {
		t.Errorf("validation error = %+v", e)
	}
	var notFound apiwire.ErrorBody
	wire("GET", "/api/v1/agents/nope", nil, http.StatusNotFound, &notFound)

	var search apiwire.NetworkSearch
	wire("POST", "/api/v1/network/search?tag=wire", nil, http.StatusOK, &search)
	if search.Tag != "wire" {
		t.Errorf("network search = %+v", search)
	}
}
