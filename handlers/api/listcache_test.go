package api_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// TestAPIListThroughCache: with the node's read cache in front of the
// store (an hour's TTL, so only invalidation can refresh it), the list
// endpoint serves its encoded bytes again until a write, and every write
// through the Sink (register, update, delete) shows at once; the bytes are
// the same JSON as the listing's own endpoint gives.
func TestAPIListThroughCache(t *testing.T) {
	cached := func(st store.Store) store.Store {
		return store.Composed{Network: store.NewCache(st, time.Hour, 1000), Backends: st, Accounts: st, Sessions: st, Conversations: st, Memories: st, Conn: st}
	}
	for name, open := range map[string]func(t *testing.T) store.Store{
		"sqlite":   func(t *testing.T) store.Store { return OpenSQLite(t) },
		"postgres": func(t *testing.T) store.Store { return pgtest.Open(t) },
	} {
		t.Run(name, func(t *testing.T) {
			e := NewWith(t, cached(open(t)))
			body := func() string {
				resp := e.Do("GET", "/api/v1/agents?q=weather", nil)
				WantStatus(t, resp, http.StatusOK)
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			if got := body(); got != "{\"agents\":[],\"next_cursor\":\"\",\"total\":0}\n" {
				t.Fatalf("empty catalogue: %s", got)
			}
			alice := e.UserToken("alice")
			resp := e.Do("POST", "/api/v1/agents", WeatherInput("weather-bot"), Bearer(alice)...)
			WantStatus(t, resp, http.StatusCreated)
			created := Decode[apiwire.Agent](t, resp)

			first := body()
			if again := body(); again != first {
				t.Errorf("a repeated search changed without a write:\n%s\n%s", first, again)
			}
			list := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?q=weather", nil))
			one := Decode[apiwire.Agent](t, e.Do("GET", "/api/v1/agents/"+created.ID, nil))
			if len(list.Agents) != 1 || list.Agents[0].ID != created.ID || list.Agents[0].Seq != one.Seq ||
				list.Agents[0].Description != one.Description || len(list.Agents[0].Skills) != len(one.Skills) || !list.Agents[0].LastSeen.Equal(one.LastSeen) {
				t.Fatalf("list after register = %+v, want the agent %+v", list.Agents, one)
			}

			in := WeatherInput("weather-bot")
			in.DisplayName = "Weather Bot 2"
			WantStatus(t, e.Do("PUT", "/api/v1/agents/"+created.ID, in, Bearer(alice)...), http.StatusOK)
			list = Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?q=weather", nil))
			if len(list.Agents) != 1 || list.Agents[0].DisplayName != "Weather Bot 2" || list.Agents[0].Seq <= one.Seq {
				t.Fatalf("list after update = %+v, want the new version", list.Agents)
			}

			WantStatus(t, e.Do("DELETE", "/api/v1/agents/"+created.ID, nil, Bearer(alice)...), http.StatusNoContent)
			if got := body(); got != "{\"agents\":[],\"next_cursor\":\"\",\"total\":0}\n" {
				t.Errorf("list after delete: %s", got)
			}
		})
	}
}
