// Package verifytest serves domain proofs to tests: a tiny authoritative
// DNS server on 127.0.0.1, so verify's DNS proofs run against a real
// resolver and a real UDP server (agent/verify's tests and the whole-node
// test in cmd/agentsite).
package verifytest

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/agentsite/agentsite/agent/verify"
)

// DNS answers TXT questions from records the test sets (NXDOMAIN for a
// name it never set) and every A question with 127.0.0.1, so an HTTPS
// proof's host reaches the test's TLS server.
type DNS struct {
	conn net.PacketConn
	mu   sync.Mutex
	txt  map[string][]string // fqdn with trailing dot → records
}

// StartDNS serves until the test ends.
func StartDNS(tb testing.TB) *DNS {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &DNS{conn: pc, txt: map[string][]string{}}
	tb.Cleanup(func() { pc.Close() })
	go s.serve()
	return s
}

// Addr is the server's host:port (--verify-dns-server).
func (s *DNS) Addr() string { return s.conn.LocalAddr().String() }

// Set makes name's TXT records records (none: the name exists, without
// records).
func (s *DNS) Set(name string, records ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.txt[name+"."] = records
}

// Resolver is a Go resolver that asks only s.
func (s *DNS) Resolver() verify.Resolver {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.Addr())
	}}
	return r.LookupTXT
}

func (s *DNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, addr, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		s.mu.Lock()
		records, ok := s.txt[strings.ToLower(q.Name.String())]
		s.mu.Unlock()
		rcode := dnsmessage.RCodeSuccess
		if q.Type == dnsmessage.TypeTXT && !ok {
			rcode = dnsmessage.RCodeNameError
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: rcode})
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		hdr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
		switch q.Type {
		case dnsmessage.TypeTXT:
			for _, r := range records {
				_ = b.TXTResource(hdr, dnsmessage.TXTResource{TXT: []string{r}})
			}
		case dnsmessage.TypeA:
			_ = b.AResource(hdr, dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}})
		}
		if out, err := b.Finish(); err == nil {
			_, _ = s.conn.WriteTo(out, addr)
		}
	}
}
