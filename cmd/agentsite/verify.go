package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/verify"
	"github.com/agentsite/agentsite/p2p"
)

// Verified publishers (agent/verify): this node proves the
// domains its operator claims (--verify-domain) and carries the proved ones
// in its heartbeats; it proves the domains other nodes claim itself before
// showing them.

// verifyFetchTimeout bounds one HTTPS proof fetch.
const verifyFetchTimeout = 15 * time.Second

// verifyConfig is the --verify-* flags.
type verifyConfig struct {
	Domains   []string
	Every     time.Duration
	DNSServer string
	CAFile    string
	Budget    int
	// TrustDomains trust the publishers proved to control them
	// (p2p.Admission.TrustDomains).
	TrustDomains []string
}

// declareVerify declares the --verify-* flags on c.
func (c *Config) declareVerify(fs *flag.FlagSet) {
	fs.Var(&stringList{vals: &c.Verify.Domains}, "verify-domain", fmt.Sprintf("a domain this node's operator controls, proved by a DNS TXT record %s<peer id> or https://<domain>%s listing the peer id, and then shown as \"verified\" beside this node's agents everywhere (repeatable, at most %d)", verify.TXTPrefix, verify.WellKnownPath, verify.MaxDomains))
	fs.DurationVar(&c.Verify.Every, "verify-every", verify.DefaultEvery, "how often each proved domain (this node's and other nodes') is checked again; three failures in a row unverify it")
	fs.StringVar(&c.Verify.DNSServer, "verify-dns-server", "", "host:port of the DNS server the proofs' look-ups ask (TXT records, and the HTTPS proof's host names); empty: the system resolver")
	fs.StringVar(&c.Verify.CAFile, "verify-ca", "", "PEM file of extra root certificates trusted for the HTTPS proof, besides the system's")
	fs.Var(&stringList{vals: &c.Verify.TrustDomains}, "trust-domain", "a domain whose proved publishers are trusted as --trust-peer ones are (no admission quotas; kept under --trusted-only), once this node proved they control it (repeatable)")
	fs.IntVar(&c.Verify.Budget, "verify-budget", verify.DefaultPerMinute, "proofs of other nodes' claimed domains this node checks a minute at most (0: it checks none, and shows only its own)")
}

// validateVerify checks the --verify-* flags.
func (c *Config) validateVerify() []error {
	var errs []error
	v := c.Verify
	seen := map[string]bool{}
	for _, d := range v.Domains {
		n, err := verify.NormalizeDomain(d)
		if err != nil {
			errs = append(errs, fmt.Errorf("--verify-domain: %w", err))
			continue
		}
		if seen[n] {
			errs = append(errs, fmt.Errorf("--verify-domain %q is given twice", d))
		}
		seen[n] = true
	}
	if len(seen) > verify.MaxDomains {
		errs = append(errs, fmt.Errorf("--verify-domain is given %d times; a node proves at most %d domains", len(seen), verify.MaxDomains))
	}
	if v.Every < time.Second || v.Every > 7*24*time.Hour {
		errs = append(errs, errors.New("--verify-every must be between 1s and 168h (default 6h)"))
	}
	if v.DNSServer != "" {
		if host, port, err := net.SplitHostPort(v.DNSServer); err != nil || host == "" || port == "" {
			errs = append(errs, fmt.Errorf("--verify-dns-server %q must be host:port, e.g. 9.9.9.9:53 or 127.0.0.1:5353", v.DNSServer))
		}
	}
	if v.CAFile != "" {
		if _, err := loadCA(v.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("--verify-ca: %w", err))
		}
	}
	for _, d := range v.TrustDomains {
		if _, err := verify.NormalizeDomain(d); err != nil {
			errs = append(errs, fmt.Errorf("--trust-domain: %w", err))
		}
	}
	if len(v.TrustDomains) > 0 && v.Budget == 0 {
		errs = append(errs, errors.New("--trust-domain needs --verify-budget above 0: this node proves other nodes' domains itself before trusting them"))
	}
	if v.Budget < 0 || v.Budget > 100000 {
		errs = append(errs, errors.New("--verify-budget must be between 0 and 100000 proofs a minute (default 60)"))
	}
	return errs
}

// loadCA reads a PEM file of root certificates into the system's pool.
func loadCA(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read it: %w", err) // the error names the file: "open FILE: why"
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", file)
	}
	return pool, nil
}

// verification is this node's side of verified publishers: its own
// domains (own), and other nodes' claims it proves (claims), which also
// answers for its own peer id. It is what handlers.Verified and
// p2p.Config's Domains and Claims take.
type verification struct {
	*verify.Claims
	own *verify.Checker
}

// OwnStatuses is every domain this node claims and how its proof went,
// for GET /api/v1/node.
func (v *verification) OwnStatuses() []verify.Status { return v.own.Statuses() }

// buildVerify builds the verification of the --verify-* flags for this
// node (its peer id is known: the key is loaded). httpsPort, for tests only, is the port the
// HTTPS proof is fetched from (0: 443).
func (a *app) buildVerify(httpsPort int) error {
	v := a.cfg.Verify
	resolver := net.DefaultResolver
	if v.DNSServer != "" {
		server := v.DNSServer
		resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}}
	}
	client := runtime.NewGuardedClientWithOptions(runtime.GuardOptions{
		// A peer names the domain: its proof is never fetched from a
		// private address, whatever the operator allows its backends.
		Policy: a.outbound.Policy(runtime.PurposeProof), Timeout: verifyFetchTimeout, Resolver: resolver,
	})
	if v.CAFile != "" {
		pool, err := loadCA(v.CAFile)
		if err != nil {
			return fmt.Errorf("--verify-ca: %w", err)
		}
		tr, ok := client.Transport.(*http.Transport)
		if !ok {
			return errors.New("the guarded client's transport is not an *http.Transport")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	fetch := httpsFetcher(client, httpsPort)
	claims := &verify.Claims{LookupTXT: resolver.LookupTXT, Fetch: fetch, Every: v.Every,
		PerMinute: v.Budget, Logger: a.logger, SelfID: a.peerID}
	own := &verify.Checker{PeerID: a.peerID, LookupTXT: resolver.LookupTXT, Fetch: fetch, Every: v.Every, Logger: a.logger,
		OnChange: func(verified []string) {
			a.logger.Info("verify: this node's verified domains changed; the next heartbeat carries them", "domains", verified)
			claims.Changed()
		}}
	if err := own.Claim(v.Domains...); err != nil {
		return fmt.Errorf("--verify-domain: %w", err)
	}
	claims.Self = own.Verified
	a.verify = &verification{Claims: claims, own: own}
	return nil
}

// startVerify starts proving this node's domains, and other nodes' claims
// (unless --verify-budget is 0), in the background.
func (a *app) startVerify() {
	if a.verify == nil {
		return
	}
	if len(a.cfg.Verify.Domains) > 0 {
		tick := min(max(a.cfg.Verify.Every/10, time.Second), time.Minute)
		a.goLoop(func(ctx context.Context) { a.verify.own.Run(ctx, tick) })
	}
	if a.cfg.Verify.Budget > 0 {
		a.goLoop(a.verify.Claims.Run)
	}
}

// claimsSink is what p2p hands other nodes' claims to: nil with
// --verify-budget 0 (nobody's claims are proved, so none are kept).
func (a *app) claimsSink() p2p.DomainClaims {
	if a.verify == nil || a.cfg.Verify.Budget == 0 {
		return nil
	}
	return a.verify.Claims
}

// trustDomains is --trust-domain, normalised.
func (v verifyConfig) trustDomains() []string {
	var out []string
	for _, d := range v.TrustDomains {
		if n, err := verify.NormalizeDomain(d); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// httpsFetcher GETs the HTTPS proof through client (the guarded one),
// reading at most max bytes; port, for tests only, replaces 443.
func httpsFetcher(client *http.Client, port int) verify.Fetcher {
	return func(ctx context.Context, raw string, max int64) ([]byte, error) {
		if port != 0 {
			u, err := url.Parse(raw)
			if err != nil {
				return nil, err
			}
			u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(port))
			raw = u.String()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("HTTP %s", resp.Status)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
		if err != nil {
			return nil, err
		}
		if int64(len(b)) > max {
			return nil, fmt.Errorf("the document is over %d bytes", max)
		}
		return b, nil
	}
}
