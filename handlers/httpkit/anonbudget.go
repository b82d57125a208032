package httpkit

import (
	"net/http"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/connlimit"
)

// Defaults of AnonBudget's address ceiling.
const (
	// DefaultAddressTurns is how many anonymous chat turns one address
	// (IPv6: its /64) may have in flight, all its visitors together: 16
	// visitors' worth of chat.DefaultLiveMaxPerOwner.
	DefaultAddressTurns = 64
	// AddressRateShare is how many visitors' per-minute chat budgets one
	// address gets, all its visitors together.
	AddressRateShare = 16
)

// AnonBudget is the address ceiling of anonymous chat. A visitor's own
// budget is counted by its session first (the key the node issued it:
// a session the node did not store carries none, so minting cookies gets
// a client nothing) and by its address only without one; so people
// behind one address (an office, a campus, carrier-grade NAT) each get
// theirs. Every visitor behind an address is also counted together here,
// against a larger and separate ceiling, so that sessions fetched by the
// hundred from one address do not add up to more.
type AnonBudget struct {
	rates *Rates
	turns *connlimit.Counter
}

// NewAnonBudget allows an address perMinute turns a minute (Rates'
// burst rule) and inFlight at once.
func NewAnonBudget(perMinute, inFlight int) *AnonBudget {
	return &AnonBudget{rates: NewRates(perMinute), turns: connlimit.NewCounter(inFlight)}
}

// Allow reports whether address may start one more turn now (the
// per-minute ceiling).
func (b *AnonBudget) Allow(address string, now time.Time) bool {
	return b.rates.Allow(address, now)
}

// Hold counts a turn of address while it runs; over the ceiling it is
// ErrAddressBusy. The caller calls release once the turn ended.
func (b *AnonBudget) Hold(address string) (release func(), err error) {
	release, ok := b.turns.Acquire(address)
	if !ok {
		return nil, ErrAddressBusy
	}
	return release, nil
}

// Held is how many turns address has in flight (tests, metrics).
func (b *AnonBudget) Held(address string) int { return b.turns.Held(address) }

// ErrAddressBusy refuses an anonymous turn while the visitors behind the
// client's address together have as many in flight as one address may.
var ErrAddressBusy = &Error{Status: http.StatusTooManyRequests, Code: string(agent.CodeRateLimited), RetryAfter: 5,
	Message: "Too many chats from your network are running at once; wait for one to finish, or sign in."}
