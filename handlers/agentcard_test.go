package handlers

import (
	"net/http"
	"testing"
)

func TestAgentCard(t *testing.T) {
	e := newTestServer(t)
	tok := e.userToken("ivy")
	wantStatus(t, e.do("POST", "/api/v1/agents", weatherInput("card-bot"), bearer(tok)...), http.StatusCreated)
	resp := e.do("GET", "/.well-known/agent-card.json", nil)
	wantStatus(t, resp, http.StatusOK)
	card := decode[agentCard](t, resp)
	if card.URL != e.ts.URL+"/mcp" || !card.Capabilities.Streaming || len(card.Skills) != 1 {
		t.Fatalf("card = %+v", card)
	}
	if sk := card.Skills[0]; sk.Name != "Weather Bot" || len(sk.Tags) != 2 || sk.Examples[0] != "Paris tomorrow?" {
		t.Errorf("skill = %+v", sk)
	}
}
