package httpkit

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// LoginLimits is the budget of password attempts per account (logging in,
// and the account forms that ask for the password again), beside the
// per-IP one: guesses at one account sprayed from many addresses are held
// too. Every attempt is charged before the password is checked, so that
// parallel guesses cannot all slip in before the first failure counts; a
// handle with no account is charged alike, so the limit does not tell
// which handles exist. An account's owner whose budget someone else spent
// keeps the sessions they have and is told when to try again.
//
// The map is bounded: a bucket that has filled up again carries nothing
// and is dropped; at the bound, an arbitrary bucket makes room. Losing one
// gives an attacker at most one burst more, and making the map reach the
// bound costs them many more attempts than that.
type LoginLimits struct {
	mu       sync.Mutex
	perMin   int
	max      int
	accounts map[string]*rate.Limiter
	swept    time.Time
}

// NewLoginLimits allows perMinute attempts a minute per account (all of
// them at once, then one every 60/perMinute seconds), for at most
// maxAccounts accounts tried at a time.
func NewLoginLimits(perMinute, maxAccounts int) *LoginLimits {
	return &LoginLimits{perMin: max(perMinute, 1), max: max(maxAccounts, 1), accounts: map[string]*rate.Limiter{}}
}

// maxHandleKey is longer than any handle (ValidateSignup): longer ones
// share one budget rather than each being kept whole.
const maxHandleKey = 64

// Allow takes one attempt at handle's account from its budget at now. When
// none is left it returns false and how long until one is.
func (l *LoginLimits) Allow(handle string, now time.Time) (bool, time.Duration) {
	key := strings.ToLower(strings.TrimSpace(handle))
	if len(key) > maxHandleKey {
		key = "\x00long"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute {
		l.sweep(now)
	}
	lim, ok := l.accounts[key]
	if !ok {
		if len(l.accounts) >= l.max {
			l.sweep(now)
		}
		for k := range l.accounts { // still full: one arbitrary bucket goes
			if len(l.accounts) < l.max {
				break
			}
			delete(l.accounts, k)
		}
		lim = rate.NewLimiter(rate.Limit(float64(l.perMin)/60), l.perMin)
		l.accounts[key] = lim
	}
	if lim.AllowN(now, 1) {
		return true, 0
	}
	wait := (1 - lim.TokensAt(now)) / float64(lim.Limit())
	return false, time.Duration(math.Ceil(wait)) * time.Second
}

// sweep drops the buckets that have filled up again; l.mu is held.
func (l *LoginLimits) sweep(now time.Time) {
	for k, lim := range l.accounts {
		if lim.TokensAt(now) >= float64(lim.Burst()) {
			delete(l.accounts, k)
		}
	}
	l.swept = now
}

// Len is how many accounts the limits hold now.
func (l *LoginLimits) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.accounts)
}

// TryAgainIn says a wait to people: "in 42 seconds", "in 2 minutes".
func TryAgainIn(d time.Duration) string {
	switch s := int(math.Ceil(d.Seconds())); {
	case s <= 1:
		return "in a second"
	case s < 90:
		return "in " + strconv.Itoa(s) + " seconds"
	default:
		return "in " + strconv.Itoa((s+59)/60) + " minutes"
	}
}
