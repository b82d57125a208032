package runtime

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

func TestCheckHostRefuses(t *testing.T) {
	for _, u := range []string{
		"http://127.0.0.1",
		"http://127.0.0.1:8080/mcp",
		"http://localhost:8080",
		"http://LOCALHOST./",
		"http://api.localhost/",
		"http://10.1.2.3",
		"http://172.16.0.1/",
		"http://192.168.1.1/",
		"http://169.254.169.254/latest",
		"http://169.254.169.254/latest/meta-data/iam/",
		"http://[::1]/",
		"http://[::1]:8080/",
		"http://[::ffff:127.0.0.1]/",
		"http://[::ffff:10.0.0.1]/",
		"http://[::ffff:169.254.169.254]/",
		"http://[fe80::1%25eth0]/",
		"http://[fc00::1]/",
		"http://[fd00:ec2::254]/", // AWS IMDS over IPv6
		"http://[::]/",
		"http://[ff02::1]/",
		"http://[64:ff9b::a9fe:a9fe]/", // NAT64 of 169.254.169.254
		"http://[2001:db8::1]/",
		"http://100.64.0.1",
		"http://0.0.0.0/",
		"http://0.1.2.3/",
		"http://224.0.0.1/",
		"http://255.255.255.255/",
		"http://192.0.2.1/",
		"http://198.18.0.1/",
		"http://foo.internal",
		"http://metadata.google.internal/computeMetadata/v1/",
		"http://FOO.INTERNAL./",
		"http://printer.local/",
		// IPv4 in the legacy forms browsers and inet_aton accept.
		"http://2130706433/",
		"http://0x7f000001/",
		"http://0x7F.0.0.1/",
		"http://0177.0.0.1/",
		"http://127.1/",
		"http://0/",
		"http://10.1/",
		"http://1.2.3.4.5/",
	} {
		if err := CheckHost(u, false); err == nil {
			t.Errorf("CheckHost(%q) = nil, want refusal", u)
		}
	}
}

func TestCheckHostAccepts(t *testing.T) {
	for _, u := range []string{
		"https://api.openai.com/v1",
		"http://93.184.216.34",
		"https://93.184.216.34:8443/mcp",
		"https://[2606:4700:4700::1111]/",
		"http://[::ffff:93.184.216.34]/",
		"https://example.com/",
		"https://localhost.example.com/", // only the localhost TLD is local
		"https://internal.example.com/",
		"https://1password.com/",
		"https://123.example/",
		"https://8.8.8.8/",
		"https://xn--mnchen-3ya.de/",
		"https://0x7f.example/",
	} {
		if err := CheckHost(u, false); err != nil {
			t.Errorf("CheckHost(%q) = %v, want nil", u, err)
		}
	}
}

func TestCheckHostBadURL(t *testing.T) {
	if err := CheckHost("http://%zz/", false); err == nil {
		t.Fatal("CheckHost(unparsable) = nil")
	}
}

// insideAddr is the next-to-highest address of p (the address of a
// single-address row): inside p and, unlike the first, never inside a
// narrower row that starts at the same address (nor 255.255.255.255 inside
// 240.0.0.0/4).
func insideAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	first := 0
	if p.Addr().Is4() {
		first = 12
	}
	for i := first*8 + p.Bits(); i < 128; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	if p.IsSingleIP() {
		return a
	}
	return a.Prev()
}

func hostURL(ip netip.Addr) string {
	return "http://" + netip.AddrPortFrom(ip, 8080).String() + "/v1"
}

// TestSpecialRangesRefused checks an address inside every row of the
// special-purpose table at registration (CheckHost) and at dial time
// (checkDialAddr), without and with --allow-private-endpoints.
func TestSpecialRangesRefused(t *testing.T) {
	for _, row := range specialRanges {
		ip := insideAddr(row.prefix)
		t.Run(row.prefix.String()+" "+row.name, func(t *testing.T) {
			if !row.prefix.Contains(ip) {
				t.Fatalf("test address %s is outside the row", ip)
			}
			if err := CheckHost(hostURL(ip), false); err == nil {
				t.Errorf("registration accepts %s", hostURL(ip))
			}
			if err := checkDialAddr(netip.AddrPortFrom(ip, 443).String(), Policy{}); !errors.Is(err, agent.ErrBlockedAddress) {
				t.Errorf("dialer check of %s: %v, want ErrBlockedAddress", ip, err)
			}
			var ae *addrError
			if err := CheckAddr(ip, false); row.reach != reachEmbedded && (!errors.As(err, &ae) || ae.row.prefix != row.prefix) {
				t.Errorf("CheckAddr(%s) = %v, want the row %s", ip, err, row.prefix)
			}
			wantPrivateOK := row.reach == reachPrivate
			if err := CheckHost(hostURL(ip), true); (err == nil) != wantPrivateOK {
				t.Errorf("registration with private allowed: %v, want allowed=%v", err, wantPrivateOK)
			}
			if err := checkDialAddr(netip.AddrPortFrom(ip, 443).String(), Policy{Private: true}); (err == nil) != wantPrivateOK {
				t.Errorf("dialer check with private allowed: %v, want allowed=%v", err, wantPrivateOK)
			}
		})
	}
}

func TestSpecialRangesWellFormed(t *testing.T) {
	for _, row := range specialRanges {
		if row.prefix != row.prefix.Masked() || row.name == "" {
			t.Errorf("row %s %q: prefix has host bits set or no name", row.prefix, row.name)
		}
	}
}

// TestCheckAddrSpecialIPv6 pins the IPv6 forms that embed or tunnel to a
// private IPv4 address (mapped, compatible, NAT64, 6to4, Teredo and a few
// more), each of which once passed the guard or might.
func TestCheckAddrSpecialIPv6(t *testing.T) {
	for _, s := range []string{
		"::127.0.0.1", "::10.0.0.1", "::8.8.8.8", // IPv4-compatible
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0",
		"2002:7f00:1::", "2002:a00:1::1", "2002:808:808::1", // 6to4
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "64:ff9b::", "64:ff9b:1::a9fe:a9fe",
		"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo
		"fec0::1", "fc00::1", "fd00:ec2::254", "fe80::1", "fe80::1%eth0", "ff02::1", "ff0e::1",
		"2001:db8::1", "3fff::1", "100::1", "2001:2::1", "2001:10::1", "2001:20::1",
		"::", "::1", "4000::1", "::ffff:0:7f00:1", "1::", "5f00::1",
	} {
		ip := netip.MustParseAddr(s)
		if err := CheckAddr(ip, false); err == nil {
			t.Errorf("CheckAddr(%s) = nil, want refusal", s)
		}
		if err := CheckHost(hostURL(ip), false); err == nil {
			t.Errorf("CheckHost(%s) = nil, want refusal", hostURL(ip))
		}
	}
}

// TestCheckAddrGlobal: true global addresses pass, also through the
// translation prefixes that carry a global IPv4 address.
func TestCheckAddrGlobal(t *testing.T) {
	for _, s := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0", "198.20.0.0", "172.32.0.1",
		"192.0.1.1", "192.88.98.1", "223.255.255.254",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001::1", "2001:200::1",
		"::ffff:8.8.8.8", "64:ff9b::808:808",
	} {
		ip := netip.MustParseAddr(s)
		if err := CheckAddr(ip, false); err != nil {
			t.Errorf("CheckAddr(%s) = %v, want nil", s, err)
		}
		if err := checkDialAddr(netip.AddrPortFrom(ip, 443).String(), Policy{}); err != nil {
			t.Errorf("checkDialAddr(%s) = %v, want nil", s, err)
		}
	}
	if err := CheckAddr(netip.Addr{}, true); err == nil {
		t.Error("CheckAddr(zero Addr) = nil")
	}
}

// TestCheckHostAllowPrivate: --allow-private-endpoints admits local names
// and the operator's networks, never the ranges no backend lives at.
func TestCheckHostAllowPrivate(t *testing.T) {
	for _, u := range []string{"http://localhost:11434/v1", "http://127.0.0.1:8080/", "http://[::1]/", "http://10.1.2.3/", "http://[fd00::1]/", "http://100.100.1.1/", "http://printer.local/"} {
		if err := CheckHost(u, true); err != nil {
			t.Errorf("CheckHost(%q, allowPrivate) = %v, want nil", u, err)
		}
	}
	for _, u := range []string{"http://0.0.0.0:8080/", "http://[::]/", "http://224.0.0.1/", "http://[ff02::1]/", "http://255.255.255.255/", "http://[::127.0.0.1]/", "http://192.0.2.1/", "http://[2002:7f00:1::]/"} {
		if err := CheckHost(u, true); err == nil {
			t.Errorf("CheckHost(%q, allowPrivate) = nil, want refusal", u)
		}
	}
}

// TestCheckHostPrivateMessage: the refusal of a private host is shown to
// users, so it says what the node does and names no command-line flag.
func TestCheckHostPrivateMessage(t *testing.T) {
	for _, raw := range []string{"http://localhost:8080/v1", "http://svc.internal/v1", "http://127.0.0.1:8080/v1", "http://10.0.0.1/v1", "http://[::1]/v1"} {
		err := CheckHost(raw, false)
		if err == nil {
			t.Fatalf("CheckHost(%q) accepted", raw)
		}
		if msg := err.Error(); strings.Contains(msg, "--") || !strings.Contains(msg, "this node does not allow private addresses for agent backends") {
			t.Errorf("CheckHost(%q) = %q", raw, msg)
		}
	}
}
