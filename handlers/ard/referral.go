package ard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// Referrals (federation "referrals", ARD §8): the node answers from its
// mirror and names other registries that may answer more: the other
// AgentSite nodes it hears (online node rows, written from their signed
// heartbeats) that announce an HTTP address. A node announces one in
// libp2p's own notation, among the addresses of its heartbeat:
// /dns4/agents.example.org/tcp/443/tls/http (or /https, /http; an
// /http-path is kept), e.g. with --announce. The hosts of the page's
// listings come first (they hold those agents), then the other nodes in
// peer id order.
//
// A referral sends a stranger somewhere on a peer's word, so only nodes
// that earned it are named: online, hosting listings this node holds
// (the row's agents_hosted, which the Sink caps by what it holds), heard
// for ReferAfter, at an address that is a public host name or a public
// unicast IP (agent.CheckHostname, runtime.SpecialAddr). A swarm of fresh
// identities that host nothing fills no slot.
const (
	// MaxReferrals bounds the referrals of one answer.
	MaxReferrals = 10
	// maxReferralScan bounds the node rows one answer reads for them.
	maxReferralScan = 500
	// maxReferralAges bounds the nodes whose first sighting is kept;
	// past it the sightings start again (referrals wait ReferAfter).
	maxReferralAges = 4096
)

// Nodes is what this node knows of the planet's other nodes: their rows,
// written from their signed heartbeats (store.Store).
type Nodes interface {
	GetNodes(ctx context.Context, peerIDs []string) ([]store.Node, error)
	ListNodes(ctx context.Context, q store.NodeQuery) (store.NodePage, error)
}

// referralRun is what a referrals answer looked at (the AgentSite-Federation
// header): Online nodes heard (of Scanned rows read), Addressed of them at
// an address it may refer to, Referred of those.
type referralRun struct {
	Scanned, Online, Addressed, Referred int
}

// referrals are the registries of the nodes this one hears, hosts of
// listings first, never this node, at most MaxReferrals. private says
// loopback and private addresses may be referred to (the client itself
// reached this node on one).
func (h *Handler) referrals(ctx context.Context, listings []store.Listing, private bool) ([]Referral, referralRun, error) {
	out := []Referral{}
	var run referralRun
	if h.Nodes == nil {
		return out, run, nil
	}
	seen := map[string]bool{h.Self: true}
	now := h.Now()
	// hostsOfPage: the nodes hosting the page's listings, which this node
	// holds by the page itself (a row's agents_hosted may lag a mirror
	// still filling by a minute).
	consider := func(nodes []store.Node, hostsOfPage bool) {
		for _, n := range nodes {
			if len(out) >= MaxReferrals || seen[n.PeerID] {
				continue
			}
			seen[n.PeerID] = true
			run.Scanned++
			if n.Status != store.StatusOnline {
				h.forgetAge(n.PeerID)
				continue
			}
			run.Online++
			u, ok := registryURL(n.Addrs, private)
			if !ok {
				continue
			}
			run.Addressed++
			if !hostsOfPage && n.AgentsHosted <= 0 || !h.heardLongEnough(n.PeerID, now) {
				continue
			}
			name := n.Name
			if name == "" {
				name = n.PeerID
			}
			out = append(out, Referral{
				Identifier:  URNIn(n.PeerID, NamespaceRegistry, "ard"),
				DisplayName: name + " registry",
				Type:        TypeRegistry,
				URL:         u,
			})
		}
	}
	var hosts []string
	for _, l := range listings {
		if p := l.HostPeerID; p != "" && !seen[p] && !l.Local {
			hosts = append(hosts, p)
		}
	}
	if len(hosts) > 0 {
		nodes, err := h.Nodes.GetNodes(ctx, hosts)
		if err != nil {
			return nil, run, err
		}
		consider(nodes, true)
	}
	q := store.NodeQuery{Limit: store.MaxLimit}
	for len(out) < MaxReferrals && run.Scanned < maxReferralScan {
		page, err := h.Nodes.ListNodes(ctx, q)
		if err != nil {
			return nil, run, err
		}
		consider(page.Nodes, false)
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	run.Referred = len(out)
	return out, run, nil
}

// registryURL is the ARD search route at the first HTTP address among a
// node's addresses (https before http); ok is false when it announces
// none (or only private ones, unless private).
func registryURL(addrs []string, private bool) (string, bool) {
	var plain string
	for _, a := range addrs {
		u, secure, ok := httpBase(a, private)
		switch {
		case !ok:
		case secure:
			return u + BasePath + "/search", true
		case plain == "":
			plain = u
		}
	}
	if plain == "" {
		return "", false
	}
	return plain + BasePath + "/search", true
}

// httpBase reads an HTTP transport multiaddr (host, tcp port, optional
// tls, http or https, optional http-path, optional p2p) as a base URL.
func httpBase(addr string, private bool) (base string, secure, ok bool) {
	m, err := ma.NewMultiaddr(addr)
	if err != nil || len(m) < 3 {
		return "", false, false
	}
	var host, port, path string
	var isHTTP bool
	for i, c := range m {
		code := c.Protocol().Code
		switch {
		case i == 0 && (code == ma.P_IP4 || code == ma.P_IP6 || code == ma.P_DNS || code == ma.P_DNS4 || code == ma.P_DNS6):
			var ok bool
			if host, ok = referrableHost(c.Value(), private); !ok {
				return "", false, false
			}
		case i == 1 && code == ma.P_TCP:
			port = c.Value()
		case i == 2 && code == ma.P_TLS && !isHTTP:
			secure = true
		case (i == 2 || i == 3) && code == ma.P_SNI:
		case (i == 2 || i == 3 || i == 4) && (code == ma.P_HTTP || code == ma.P_HTTPS) && !isHTTP:
			isHTTP = true
			secure = secure || code == ma.P_HTTPS
		case isHTTP && code == ma.P_HTTP_PATH && path == "":
			p, err := url.PathUnescape(c.Value())
			if err != nil {
				return "", false, false
			}
			path = "/" + strings.Trim(p, "/")
		case isHTTP && code == ma.P_P2P:
		default:
			return "", false, false
		}
	}
	if host == "" || port == "" || !isHTTP {
		return "", false, false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", false, false
	}
	scheme, def := "http", "80"
	if secure {
		scheme, def = "https", "443"
	}
	hostport := net.JoinHostPort(host, port)
	if port == def {
		hostport = strings.TrimSuffix(hostport, ":"+port)
	}
	if path == "/" {
		path = ""
	}
	return fmt.Sprintf("%s://%s%s", scheme, hostport, path), secure, true
}

// referrableHost is the URL host of an address's first component (an IP,
// or a DNS name, which may itself be an IP literal: it is read as one),
// when a client may be sent there: a host name (agent.CheckHostname, so
// no user-info, port, path or numeric spoof) not local-only, or a public
// unicast IP; with private, loopback and private IPs and names too, never
// link-local (cloud metadata) nor an IPv6 form embedding an IPv4 address.
func referrableHost(v string, private bool) (string, bool) {
	ip, err := netip.ParseAddr(v)
	if err != nil {
		if agent.CheckHostname(v) != nil || !private && agent.LocalOnlyName(v) {
			return "", false
		}
		return strings.ToLower(strings.TrimSuffix(v, ".")), true
	}
	switch {
	case !runtime.SpecialAddr(ip):
	case private && !ip.Is4In6() && (ip.IsLoopback() || ip.IsPrivate()) && ip != awsMetadataV6:
	default:
		return "", false
	}
	return ip.String(), true
}

// awsMetadataV6 is a cloud metadata service in the unique-local block,
// which a private origin may otherwise be referred to.
var awsMetadataV6 = netip.MustParseAddr("fd00:ec2::254")

// heardLongEnough says the node peer has been seen online, by the
// referral answers, for ReferAfter: a fresh identity is not referred at
// once. A node seen offline starts again (forget).
func (h *Handler) heardLongEnough(peer string, now time.Time) bool {
	if h.ReferAfter <= 0 {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	first, ok := h.referAges[peer]
	if !ok {
		if h.referAges == nil || len(h.referAges) >= maxReferralAges {
			h.referAges = map[string]time.Time{}
		}
		h.referAges[peer] = now
		return false
	}
	return now.Sub(first) >= h.ReferAfter
}

// forgetAge drops the first sighting of a node seen not online.
func (h *Handler) forgetAge(peer string) {
	h.mu.Lock()
	delete(h.referAges, peer)
	h.mu.Unlock()
}

// privateOrigin says whether origin (the base URL the client reached this
// node at) is on loopback or a private network: then the nodes it refers
// to may be too (a test or a LAN); a public node never refers clients to
// private addresses a peer announced.
func privateOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && (ip.IsLoopback() || ip.IsPrivate())
}

// note is what the AgentSite-Federation header says of a referrals
// answer: why it has none, when it has none.
func (r referralRun) note(hasNodes bool) string {
	switch {
	case r.Referred > 0:
		return ""
	case !hasNodes:
		return "no referrals: this node keeps no record of other nodes"
	case r.Online == 0:
		return "no referrals: this node hears no other online node"
	case r.Addressed > 0:
		return fmt.Sprintf("no referrals: none of the %d online nodes at an address it may refer to hosts listings this node holds and has been heard long enough", r.Addressed)
	}
	return fmt.Sprintf("no referrals: none of the %d online nodes this node hears announces an HTTP address it may refer to (an /http or /tls/http multiaddr in its heartbeat, e.g. --announce /dns4/agents.example.org/tcp/443/tls/http)", r.Online)
}
