package runtime

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

// openest is the most an operator can open: every private backend, a
// local model's endpoint and a private network.
var openest = Outbound{AllowPrivate: true, Allow: mustAllow("127.0.0.1:11434", "[::1]:11434", "10.0.0.0/8")}

func mustAllow(entries ...string) AllowList {
	var l AllowList
	for _, s := range entries {
		e, err := ParseAllowEntry(s)
		if err != nil {
			panic(err)
		}
		l = append(l, e...)
	}
	return l
}

// TestGuardTranslatedFormsEveryPurpose: the IPv6 forms that carry an IPv4
// address (NAT64, local-use NAT64, 6to4, IPv4-mapped, IPv4-compatible) of
// loopback and of the cloud metadata address are refused at dial time for
// every purpose, under the most open settings, with one exception that is
// the address itself: IPv4-mapped loopback is loopback, which backends may
// reach when the operator allows private backends.
func TestGuardTranslatedFormsEveryPurpose(t *testing.T) {
	forms := map[string][]string{
		"127.0.0.1": {"64:ff9b::7f00:1", "64:ff9b:1::7f00:1", "2002:7f00:1::1", "::127.0.0.1", "::ffff:127.0.0.1"},
		"169.254.169.254": {"169.254.169.254", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a9fe:a9fe", "2002:a9fe:a9fe::1", "::169.254.169.254",
			"::ffff:169.254.169.254", "fd00:ec2::254", "100.100.100.200"},
	}
	for _, purpose := range Purposes {
		p := openest.Policy(purpose)
		for target, ips := range forms {
			for _, s := range ips {
				for _, port := range []uint16{80, 11434} {
					ap := netip.AddrPortFrom(netip.MustParseAddr(s), port)
					err := checkDialAddr(ap.String(), p)
					mappedLoopback := s == "::ffff:127.0.0.1" && (purpose == PurposeBackend || purpose == PurposeImport && port == 11434)
					switch {
					case mappedLoopback && err != nil:
						t.Errorf("%s: %s (%s) refused: %v", purpose, ap, target, err)
					case !mappedLoopback && !errors.Is(err, agent.ErrBlockedAddress):
						t.Errorf("%s: %s (a form of %s) = %v, want refused", purpose, ap, target, err)
					}
				}
			}
		}
	}
	// The rule under every policy: with private addresses allowed,
	// translation and metadata forms are still refused.
	for _, s := range append(forms["169.254.169.254"], "64:ff9b::7f00:1", "64:ff9b::a00:1", "2002:7f00:1::1") {
		if err := CheckAddr(netip.MustParseAddr(s), true); err == nil {
			t.Errorf("CheckAddr(%s, allowPrivate) = nil, want refused", s)
		}
		if !SpecialAddr(netip.MustParseAddr(s)) {
			t.Errorf("SpecialAddr(%s) = false", s)
		}
	}
}

// TestPolicyPerPurpose: who may reach what. Backends reach the operator's
// networks with the broad switch; imports only the --allow-endpoint
// entries; push, proofs, cards for others and referrals nothing private.
func TestPolicyPerPurpose(t *testing.T) {
	narrow := Outbound{Allow: mustAllow("127.0.0.1:11434")}
	cases := []struct {
		o     Outbound
		addr  string
		reach []Purpose
	}{
		{narrow, "127.0.0.1:11434", []Purpose{PurposeBackend, PurposeImport}},
		{narrow, "127.0.0.1:11435", nil},
		{narrow, "[::1]:11434", nil},
		{narrow, "10.0.0.1:11434", nil},
		{narrow, "93.184.216.34:443", Purposes},
		{openest, "127.0.0.1:80", []Purpose{PurposeBackend}},
		{openest, "192.168.1.1:80", []Purpose{PurposeBackend}},
		{openest, "10.9.9.9:5000", []Purpose{PurposeBackend, PurposeImport}},
		{openest, "169.254.169.254:80", nil},
		{Outbound{AllowPrivate: true, Allow: mustAllow("169.254.0.0/16", "100.64.0.0/10", "fd00::/8")}, "100.100.100.200:80", nil},
		{Outbound{Allow: mustAllow("169.254.0.0/16", "100.64.0.0/10", "fd00::/8")}, "[fd00:ec2::254]:80", nil},
		{Outbound{Allow: mustAllow("169.254.0.0/16")}, "169.254.169.254:80", nil},
		{Outbound{Allow: mustAllow("169.254.0.0/16")}, "169.254.1.1:80", []Purpose{PurposeBackend, PurposeImport}},
		{openest, "0.0.0.0:11434", nil},
		{Outbound{TestAllow: mustAllow("127.0.0.1:9")}, "127.0.0.1:9", Purposes},
		// --allow-push-endpoint opens the operator's receiver to push only.
		{Outbound{AllowPush: mustAllow("127.0.0.1/32")}, "127.0.0.1:8000", []Purpose{PurposePush}},
		{Outbound{AllowPush: mustAllow("127.0.0.1/32")}, "10.0.0.1:8000", nil},
		{Outbound{AllowPush: mustAllow("169.254.0.0/16")}, "169.254.169.254:80", nil},
	}
	for _, c := range cases {
		for _, p := range Purposes {
			err := c.o.Policy(p).CheckAddrPort(netip.MustParseAddrPort(c.addr))
			if want := slices.Contains(c.reach, p); (err == nil) != want {
				t.Errorf("%+v %s %s: %v, want reachable=%v", c.o, p, c.addr, err, want)
			}
		}
	}
}

// TestPolicyCheckURL: registration follows the policy, a local name
// included, and the error says what the node refuses.
func TestPolicyCheckURL(t *testing.T) {
	p := Policy{Allow: mustAllow("localhost:11434")}
	for _, u := range []string{"http://127.0.0.1:11434/v1", "http://localhost:11434/v1", "http://[::1]:11434/v1", "https://api.example.com/v1"} {
		if err := p.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%s) = %v", u, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8080/v1", "http://localhost/v1", "http://10.0.0.1:11434/", "http://svc.internal:11434/", "http://[64:ff9b::7f00:1]:11434/"} {
		if err := p.CheckURL(u); err == nil {
			t.Errorf("CheckURL(%s) = nil, want refused", u)
		}
	}
}

func TestParseAllowEntry(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:11434":       "127.0.0.1:11434",
		"[::1]:8080":            "[::1]:8080",
		"10.1.2.0/24":           "10.1.2.0/24",
		"10.1.2.3/24":           "10.1.2.0/24",
		"[::ffff:10.0.0.1]:80":  "10.0.0.1:80",
		"100.64.1.2:9000":       "100.64.1.2:9000",
		"fd12::/16":             "fd12::/16",
		"localhost:11434":       "127.0.0.1:11434,[::1]:11434",
		" 192.168.1.10:8000 ":   "192.168.1.10:8000",
		"[fe80::1]:80":          "[fe80::1]:80",
		"169.254.169.253:80":    "169.254.169.253:80",
		"172.16.0.0/12":         "172.16.0.0/12",
		"127.0.0.0/8":           "127.0.0.0/8",
		"[fd00:ec2::253]:80":    "[fd00:ec2::253]:80",
		"192.168.0.0/16":        "192.168.0.0/16",
		"10.0.0.0/8":            "10.0.0.0/8",
		"[fc00::1]:1":           "[fc00::1]:1",
		"100.100.100.199:80":    "100.100.100.199:80",
		"100.64.0.0/10":         "100.64.0.0/10", // Alibaba's metadata address inside stays refused
		"169.254.0.0/16":        "169.254.0.0/16",
		"fd00::/8":              "fd00::/8",
		"127.0.0.1:65535":       "127.0.0.1:65535",
		"[::1]:1":               "[::1]:1",
		"10.255.255.255:443":    "10.255.255.255:443",
		"192.168.100.100:11434": "192.168.100.100:11434",
	} {
		got, err := ParseAllowEntry(in)
		var parts []string
		for _, e := range got {
			parts = append(parts, e.String())
		}
		if err != nil || strings.Join(parts, ",") != want {
			t.Errorf("ParseAllowEntry(%q) = %v, %v; want %s", in, parts, err, want)
		}
	}
	for _, in := range []string{
		"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "::1:80", "example.com:80", "ollama.local:11434",
		"8.8.8.8:53", "0.0.0.0:11434", "169.254.169.254:80", "[fd00:ec2::254]:80",
		"0.0.0.0/0", "::/0", "224.0.0.1:80", "[::]:80", "[64:ff9b::7f00:1]:80", "[2002:7f00:1::1]:80", "100.100.100.200:80",
		"100.0.0.0/8", "[fe80::1%eth0]:80", "192.0.2.1:80", "10.0.0.0/7",
	} {
		if got, err := ParseAllowEntry(in); err == nil {
			t.Errorf("ParseAllowEntry(%q) = %v, want an error", in, got)
		}
	}
}

// Every special-purpose block is special, in each of the forms that
// reach it (IPv4-mapped, NAT64, 6to4, Teredo, IPv4-compatible), and public
// unicast addresses are not.
func TestSpecialAddr(t *testing.T) {
	for _, s := range []string{
		"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "100.100.100.200",
		"192.0.0.192", "0.0.0.0", "255.255.255.255", "224.0.0.1", "198.18.0.1", "203.0.113.7", "192.88.99.1",
		"::", "::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",
		"64:ff9b:1::1", "2002:7f00:1::", "2002:a9fe:a9fe::1", "2001:0:4136:e378:8000:63bf:80ff:fffe", "fd00:ec2::254",
		"fe80::1", "fec0::1", "ff02::1", "2001:db8::1", "100::1", "fe80::1%eth0",
	} {
		if !SpecialAddr(netip.MustParseAddr(s)) {
			t.Errorf("SpecialAddr(%s) = false, want true", s)
		}
	}
	if SpecialAddr(netip.Addr{}) != true {
		t.Error("the zero Addr is not special")
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "100.128.0.1", "2606:4700::1111", "2a00:1450:4001:80b::200e"} {
		if SpecialAddr(netip.MustParseAddr(s)) {
			t.Errorf("SpecialAddr(%s) = true, want false", s)
		}
	}
}
