package agent

import (
	"net/netip"
	"testing"
)

func TestCheckPublicHostRefuses(t *testing.T) {
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
		if err := CheckPublicHost(u); err == nil {
			t.Errorf("CheckPublicHost(%q) = nil, want refusal", u)
		}
	}
}

func TestCheckPublicHostAccepts(t *testing.T) {
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
		if err := CheckPublicHost(u); err != nil {
			t.Errorf("CheckPublicHost(%q) = %v, want nil", u, err)
		}
	}
}

func TestCheckPublicHostBadURL(t *testing.T) {
	if err := CheckPublicHost("http://%zz/"); err == nil {
		t.Fatal("CheckPublicHost(unparsable) = nil")
	}
}

func TestIsPublicIP(t *testing.T) {
	cases := map[string]bool{
		"93.184.216.34":        true,
		"8.8.8.8":              true,
		"2606:4700::1111":      true,
		"::ffff:8.8.8.8":       true,
		"127.0.0.1":            false,
		"127.255.255.254":      false,
		"10.0.0.1":             false,
		"172.31.255.255":       false,
		"192.168.0.1":          false,
		"169.254.169.254":      false,
		"100.64.0.1":           false,
		"100.127.255.255":      false,
		"0.0.0.0":              false,
		"0.255.255.255":        false,
		"192.0.0.8":            false,
		"192.0.2.1":            false,
		"198.18.0.1":           false,
		"198.19.255.255":       false,
		"198.51.100.1":         false,
		"203.0.113.1":          false,
		"224.0.0.1":            false,
		"240.0.0.1":            false,
		"255.255.255.255":      false,
		"::":                   false,
		"::1":                  false,
		"::ffff:127.0.0.1":     false,
		"::ffff:192.168.0.1":   false,
		"fe80::1":              false,
		"fc00::1":              false,
		"fd12:3456::1":         false,
		"ff02::1":              false,
		"ff01::1":              false,
		"64:ff9b::7f00:1":      false,
		"2001:db8::1":          false,
		"fe80::1%eth0":         false,
		"100.63.255.255":       true,
		"100.128.0.0":          true,
		"198.20.0.0":           true,
		"172.32.0.1":           true,
		"2001:4860:4860::8888": true,
	}
	for s, want := range cases {
		ip := netip.MustParseAddr(s)
		if got := IsPublicIP(ip); got != want {
			t.Errorf("IsPublicIP(%s) = %v, want %v", s, got, want)
		}
	}
	if IsPublicIP(netip.Addr{}) {
		t.Error("IsPublicIP(zero Addr) = true")
	}
}
