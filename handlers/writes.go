package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// Per-account write budgets, beside the per-IP ones: every listing a
// node's accounts create, change or delete is signed by the node and
// gossiped under its one publisher id, so one account writing from many
// addresses (10 IPs made 360 updates in 20 s) spent the whole node's
// gossip rate. The node paces its gossip anyway (p2p), so this keeps one
// account from taking the node's share from the others.
//
// One account's budget a minute (API create, update, delete; the portal's
// register and edit), whichever addresses they come from, is what one
// client address gets (6 × Config.RateLimit: 60 at the defaults), with a
// burst of a sixth of it (at least 10). The operator token has its own
// (OperatorWritesPerMinute).
const (
	// maxAccountBuckets bounds the accounts tracked at once; buckets idle
	// for accountBucketIdle are dropped first (a fresh bucket is full,
	// so dropping one gives back at most a burst).
	maxAccountBuckets = 10_000
	accountBucketIdle = 5 * time.Minute
)

// accountWrites is a token bucket per account id.
type accountWrites struct {
	perMin, burst int
	refusal       *httpkit.Error // the answer to an account over its budget

	mu      sync.Mutex
	buckets map[int64]*accountBucket
	swept   time.Time
}

type accountBucket struct {
	lim    *rate.Limiter
	seen   time.Time
	warned time.Time // the last refusal logged
}

func newAccountWrites(perMinute int) *accountWrites {
	return &accountWrites{perMin: perMinute, burst: max(perMinute/6, 10), buckets: map[int64]*accountBucket{},
		refusal: &httpkit.Error{Status: http.StatusTooManyRequests, Code: string(agent.CodeRateLimited),
			Message: fmt.Sprintf("This account made too many changes: at most %d a minute, from any address. Wait a minute and try again; "+
				"to register many agents at once, the operator can use POST /api/v1/agents:batch.", perMinute),
			RetryAfter: 60}}
}

// allow takes one write from account's budget if there is one; warn says
// to log a refusal (once a minute per account).
func (a *accountWrites) allow(account int64, now time.Time) (ok, warn bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.swept) > time.Minute || len(a.buckets) >= maxAccountBuckets {
		for k, b := range a.buckets {
			if now.Sub(b.seen) > accountBucketIdle {
				delete(a.buckets, k)
			}
		}
		if len(a.buckets) >= maxAccountBuckets {
			clear(a.buckets)
		}
		a.swept = now
	}
	b, ok := a.buckets[account]
	if !ok {
		b = &accountBucket{lim: rate.NewLimiter(rate.Limit(float64(a.perMin)/60), a.burst)}
		a.buckets[account] = b
	}
	b.seen = now
	if b.lim.AllowN(now, 1) {
		return true, false
	}
	if now.Sub(b.warned) < time.Minute {
		return false, false
	}
	b.warned = now
	return false, true
}

// accountLimit holds a signed-in account (a personal API token, or a
// portal session) to its write budget. Requests of no account pass: the
// handler answers them (401, or the login page); the operator token spends
// its own budget (operatorOr).
func (s *Server) accountLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Accounts.IsOperator(r) {
			next.ServeHTTP(w, r)
			return
		}
		var account int64
		if r.Header.Get("Authorization") != "" {
			p, err := s.Accounts.Bearer(r)
			if err == nil && p.User != nil {
				account = p.User.ID
				r = httpkit.WithPrincipal(r, p) // the handler does not look the token up again
			}
		} else if httpkit.HasSession(r.Context()) {
			account = s.sessions.UserID(r.Context())
		}
		if account == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if ok, warn := s.accountWrites.allow(account, s.Now()); !ok {
			if warn {
				s.Logger.Info("an account is over its write budget; its writes are refused for a while",
					"account", strconv.FormatInt(account, 10), "per_minute", s.accountWrites.perMin)
			}
			s.renderError(w, r, s.accountWrites.refusal)
			return
		}
		next.ServeHTTP(w, r)
	})
}
