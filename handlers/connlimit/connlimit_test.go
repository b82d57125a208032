package connlimit

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"203.0.113.9:443", "203.0.113.9"},
		{"[2001:db8:1:2:aaaa::1]:80", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::7]:80", "2001:db8:1:2::/64"}, // same /64, same budget
		{"[::ffff:198.51.100.4]:80", "198.51.100.4"},
		{"not-an-address", "not-an-address"},
	} {
		if got := KeyOf(tc.in); got != tc.want {
			t.Errorf("KeyOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCounter(t *testing.T) {
	c := NewCounter(2)
	r1, ok1 := c.Acquire("a")
	_, ok2 := c.Acquire("a")
	_, ok3 := c.Acquire("a")
	_, okB := c.Acquire("b")
	if !ok1 || !ok2 || ok3 || !okB {
		t.Fatalf("acquire: %v %v %v %v, want true true false true", ok1, ok2, ok3, okB)
	}
	r1()
	r1() // a second release must not free another slot
	if got := c.Held("a"); got != 1 {
		t.Fatalf("held after release = %d, want 1", got)
	}
	if _, ok := c.Acquire("a"); !ok {
		t.Fatal("a freed slot was not reusable")
	}
}

// TestListenerVerdicts checks the caps on real loopback connections: the
// per-client cap marks the extra one OverClient, the total cap OverTotal,
// and closing a connection frees its slot.
func TestListenerVerdicts(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(inner, Limits{PerClient: 2, Total: 3, Refusing: 1})
	t.Cleanup(func() { _ = l.Close() })
	accepted := make(chan *Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c.(*Conn)
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	next := func() *Conn {
		select {
		case c := <-accepted:
			return c
		case <-time.After(5 * time.Second):
			t.Fatal("no connection accepted")
			return nil
		}
	}
	dial()
	a1 := next()
	dial()
	a2 := next()
	dial()
	over := next()
	if a1.verdict != Admitted || a2.verdict != Admitted || over.verdict != OverClient {
		t.Fatalf("verdicts %v %v %v, want admitted admitted over-client", a1.verdict, a2.verdict, over.verdict)
	}
	// The refusing budget (1) is taken: the next extra one is closed at once.
	c := dial()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection over the refusing budget was not closed")
	}
	_ = over.Close()
	_ = a1.Close()
	if got := l.Open(); got != 1 {
		t.Fatalf("open after close = %d, want 1", got)
	}
	dial()
	if v := next().verdict; v != Admitted {
		t.Fatalf("after a close the client got %v, want admitted", v)
	}
}

func TestListenerExempt(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(inner, Limits{PerClient: 1, Total: 2, Exempt: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	t.Cleanup(func() { _ = l.Close() })
	for i := range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		got, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		want := Admitted
		if i == 2 {
			want = OverTotal // exempt from the per-client cap, not from the total
		}
		if v := got.(*Conn).verdict; v != want {
			t.Fatalf("connection %d: %v, want %v", i, v, want)
		}
	}
}
