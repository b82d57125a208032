package connlimit

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Limits are the caps of a Listener. Zero values mean no cap.
type Limits struct {
	// PerClient is how many connections one client (Key) may hold open.
	PerClient int
	// Total is how many connections everyone together may hold open; set
	// it below the process's file limit so that accept never fails with
	// "too many open files" and health checks still get an answer.
	Total int
	// Refusing bounds the connections accepted over a cap only to be
	// answered with 429/503; beyond it they are closed at once.
	Refusing int
	// RefuseWithin is how long a refused connection may take to send its
	// request and read the refusal; default 5 s.
	RefuseWithin time.Duration
	// Exempt peers (the operator's reverse proxies, which carry many
	// clients) are held to Total only, not PerClient.
	Exempt []netip.Prefix
}

// Verdict is what the listener decided about a connection.
type Verdict int

const (
	// Admitted connections are served normally.
	Admitted Verdict = iota
	// OverClient connections exceed their client's cap: answer 429.
	OverClient
	// OverTotal connections exceed the process cap: answer 503.
	OverTotal
)

// Listener wraps a net.Listener with Limits. Connections over a cap are
// still accepted (so the client gets a clear answer instead of a hang) but
// marked: the HTTP layer reads the Verdict from the request context
// (ConnContext) and answers health checks only.
type Listener struct {
	net.Listener
	limits    Limits
	perClient *Counter

	mu       sync.Mutex
	total    int
	refusing int

	refused [3]atomic.Int64 // by Verdict; [Admitted] counts the ones closed at once
}

// NewListener caps the connections accepted from inner.
func NewListener(inner net.Listener, limits Limits) *Listener {
	if limits.RefuseWithin <= 0 {
		limits.RefuseWithin = 5 * time.Second
	}
	return &Listener{Listener: inner, limits: limits, perClient: NewCounter(limits.PerClient)}
}

// Accept returns the next connection, marked with its Verdict.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.admit(c); gc != nil {
			return gc, nil
		}
	}
}

func (l *Listener) admit(c net.Conn) net.Conn {
	key := KeyOf(c.RemoteAddr().String())
	l.mu.Lock()
	defer l.mu.Unlock()
	verdict := OverTotal
	if l.limits.Total <= 0 || l.total < l.limits.Total {
		if l.exempt(c.RemoteAddr()) {
			l.total++
			return &Conn{Conn: c, release: func() { l.done(&l.total) }}
		}
		if release, ok := l.perClient.Acquire(key); ok {
			l.total++
			return &Conn{Conn: c, release: func() { release(); l.done(&l.total) }}
		}
		verdict = OverClient
	}
	if l.limits.Refusing > 0 && l.refusing >= l.limits.Refusing {
		l.refused[Admitted].Add(1)
		_ = c.Close()
		return nil
	}
	l.refused[verdict].Add(1)
	l.refusing++
	_ = c.SetDeadline(time.Now().Add(l.limits.RefuseWithin))
	return &Conn{Conn: c, verdict: verdict, release: func() { l.done(&l.refusing) }}
}

func (l *Listener) exempt(a net.Addr) bool {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return false
	}
	for _, p := range l.limits.Exempt {
		if p.Contains(ap.Addr().Unmap()) {
			return true
		}
	}
	return false
}

func (l *Listener) done(n *int) {
	l.mu.Lock()
	*n--
	l.mu.Unlock()
}

// Open is the number of admitted connections held now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Collectors are the listener's metrics: open connections and refusals.
func (l *Listener) Collectors() []prometheus.Collector {
	refused := func(v Verdict, reason string) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "http", Name: "connections_refused_total",
			Help:        "HTTP connections refused by the connection caps, by reason.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(l.refused[v].Load()) })
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "agentsite", Subsystem: "http", Name: "connections_open",
			Help: "HTTP connections admitted and still open.",
		}, func() float64 { return float64(l.Open()) }),
		refused(OverClient, "per_client"),
		refused(OverTotal, "total"),
		refused(Admitted, "closed_unanswered"),
	}
}

// Conn is an accepted connection; closing it frees its slot once.
type Conn struct {
	net.Conn
	verdict Verdict
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

type verdictKey struct{}

// ConnContext is for http.Server.ConnContext: it puts the connection's
// Verdict into every request context on it.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*Conn); ok {
		return context.WithValue(ctx, verdictKey{}, lc.verdict)
	}
	return ctx
}

// VerdictOf is the Verdict of the connection a request came on (Admitted
// when the server does not use a Listener).
func VerdictOf(ctx context.Context) Verdict {
	v, _ := ctx.Value(verdictKey{}).(Verdict)
	return v
}
