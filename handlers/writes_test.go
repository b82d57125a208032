package handlers_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestAccountWriteBudget: one account writing from many addresses is held
// to its own write budget, whichever address each write comes from; the
// answer says which budget and what to do. Another account, and the
// operator token, keep theirs. Before, writes were limited per IP only: a
// signed-up user updated its agent 360 times in 20 s from 10 addresses,
// and the node gossiped every update.
func TestAccountWriteBudget(t *testing.T) {
	const perMinute = 60 // 6 × RateLimit, as much as one client address
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) {
		c.RateLimit = perMinute / 6
		c.TrustedProxies = []string{"127.0.0.1/32", "::1/128"}
	})
	alice, bob := e.UserToken("alice"), e.UserToken("bob")
	from := func(i int) []string { return []string{"X-Forwarded-For", fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)} }
	resp := e.Do("POST", "/api/v1/agents", WeatherInput("weather-bot"), append(Bearer(alice), from(0)...)...)
	WantStatus(t, resp, http.StatusCreated)
	id := Decode[apiwire.Agent](t, resp).ID

	in := WeatherInput("weather-bot")
	refused := 0
	var refusal string
	for i := range 3 * perMinute { // one write from each address
		in.DisplayName = fmt.Sprintf("Weather %d", i)
		resp := e.Do("PUT", "/api/v1/agents/"+id, in, append(Bearer(alice), from(i+1)...)...)
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			refused++
			if refusal == "" {
				b, _ := io.ReadAll(resp.Body)
				refusal = string(b)
			}
		default:
			t.Fatalf("update %d: status %d", i, resp.StatusCode)
		}
	}
	if ok := 3*perMinute - refused; ok > perMinute {
		t.Fatalf("one account made %d updates from %d addresses at once, want at most its budget of %d", ok, 3*perMinute, perMinute)
	}
	if !strings.Contains(refusal, "This account made too many changes") {
		t.Errorf("the refusal does not say it is the account's budget: %s", refusal)
	}

	resp = e.Do("POST", "/api/v1/agents", WeatherInput("bob-bot"), append(Bearer(bob), from(1)...)...)
	WantStatus(t, resp, http.StatusCreated)
	in.DisplayName = "Operator's edit"
	WantStatus(t, e.Do("PUT", "/api/v1/agents/"+id, in, append(Bearer(OperatorToken), from(2)...)...), http.StatusOK)
}
