package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/net/publicsuffix"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/cardsig"
)

// Limits of the a2a backend's state.
const (
	// a2aCardTTL is how long a fetched card is used before it is fetched
	// again, so a remote agent that moves its endpoint is followed.
	a2aCardTTL = 10 * time.Minute
	// a2aMaxCards bounds the card cache (one per registered a2a agent).
	a2aMaxCards = 256
	// a2aMaxContexts bounds the conversation → remote contextId map; the
	// least recently used conversation forgets its context first.
	a2aMaxContexts = 10_000
	// maxA2ACardBytes bounds an agent card; published cards are a few KiB.
	maxA2ACardBytes = 64 << 10
)

// A2A protocol bindings the a2a backend speaks.
const (
	bindingJSONRPC = "JSONRPC"
	bindingREST    = "HTTP+JSON"
)

// a2aCard is what a turn needs from an agent card: the interface chosen
// (the first of the card's that this node speaks, in the card's order of
// preference: A2A 1.0 JSON-RPC or HTTP+JSON, else 0.3 JSON-RPC).
type a2aCard struct {
	endpoint  string // the interface's URL
	binding   string // bindingJSONRPC or bindingREST
	v1        bool   // A2A 1.0 wire (else 0.3, JSON-RPC only)
	tenant    string // the 1.0 interface's tenant, if any
	streaming bool   // capabilities.streaming: a streaming send, else a blocking one
	// keyHeader is where an API key goes (an apiKey security scheme in
	// a header); "": Authorization: Bearer.
	keyHeader string
	// keySite: the endpoint is on the card's own site (registrable
	// domain), so the backend's key may be sent there.
	keySite bool
	signer  string // peer id of the node that signed the card; "" unsigned
	fetched time.Time
}

// a2aContext is where a conversation stands at a remote A2A agent, which
// keeps the history itself, by contextId.
type a2aContext struct {
	contextID string
	taskID    a2a.TaskID // a task waiting for input (input-required), else ""
}

// a2aState is the a2a backend's memory: cards by URL and remote contexts by
// conversation. Both are bounded LRUs, safe for concurrent use.
type a2aState struct {
	cards    *lru.Cache[string, a2aCard]
	contexts *lru.Cache[string, a2aContext]
	now      func() time.Time
}

func newA2AState() *a2aState {
	cards, err := lru.New[string, a2aCard](a2aMaxCards)
	if err != nil {
		panic(err) // only for a size ≤ 0
	}
	contexts, err := lru.New[string, a2aContext](a2aMaxContexts)
	if err != nil {
		panic(err)
	}
	return &a2aState{cards: cards, contexts: contexts, now: time.Now}
}

// a2aCardFor returns b's card, from the cache while it is fresh.
func (r *Runtime) a2aCardFor(ctx context.Context, b agent.Backend) (a2aCard, error) {
	if c, ok := r.a2a.cards.Get(b.URL); ok && r.a2a.now().Sub(c.fetched) < a2aCardTTL {
		return c, checkSigner(c, b.CardSigner)
	}
	_, c, err := r.loadA2ACard(ctx, b.URL)
	if err != nil {
		return c, err
	}
	return c, checkSigner(c, b.CardSigner)
}

// checkSigner refuses a card that is no longer signed by the node that
// signed it when the agent was registered.
func checkSigner(c a2aCard, pinned string) error {
	if pinned == "" || c.signer == pinned {
		return nil
	}
	public := "the agent card is no longer signed by node " + pinned
	if c.signer != "" {
		public += " (now by " + c.signer + ")"
	}
	return kindError(agent.ErrBackendRejected, agent.BackendA2A, public+"; register the agent again if it moved")
}

// A2ACardInfo is an agent card as the a2a backend read it.
type A2ACardInfo struct {
	// Card is the card in A2A 0.3's shape (a 1.0 card is mapped to it):
	// name, description, version, skills, capabilities, and url, the
	// interface this node would call.
	Card *a2a.AgentCard
	// Signer is the peer id of the node that signed the card (JWS over
	// its JCS form, agent/cardsig); "" for an unsigned card. A card whose
	// signature fails is refused, never returned unsigned.
	Signer string
	// Binding and Version are the interface chosen: "JSONRPC" or
	// "HTTP+JSON", "1.0" or "0.3".
	Binding, Version string
}

// ProbeA2A fetches the agent card at cardURL afresh, through the guarded
// client, and checks that it offers an interface this node may reach and
// speaks, and that its signature, if any, verifies: a registration form or
// a health probe learns whether the agent is usable without sending it a
// message. Errors are classified like Answer's.
func (r *Runtime) ProbeA2A(ctx context.Context, cardURL string) (*a2a.AgentCard, error) {
	info, err := r.FetchA2ACard(ctx, cardURL)
	return info.Card, err
}

// FetchA2ACard is ProbeA2A with the card's signer and chosen interface.
func (r *Runtime) FetchA2ACard(ctx context.Context, cardURL string) (A2ACardInfo, error) {
	tctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	info, _, err := r.loadA2ACard(tctx, cardURL)
	if err != nil {
		return A2ACardInfo{}, r.classify(ctx, tctx, agent.Backend{Kind: agent.BackendA2A, URL: cardURL}, err)
	}
	return info, nil
}

// loadA2ACard fetches and checks a card, and caches it.
func (r *Runtime) loadA2ACard(ctx context.Context, cardURL string) (A2ACardInfo, a2aCard, error) {
	raw, err := r.fetchA2ACard(ctx, cardURL)
	if err != nil {
		return A2ACardInfo{}, a2aCard{}, err
	}
	info, c, err := r.readA2ACard(raw, cardURL)
	if err != nil {
		return A2ACardInfo{}, a2aCard{}, err
	}
	c.fetched = r.a2a.now()
	r.a2a.cards.Add(cardURL, c)
	return info, c, nil
}

// fetchA2ACard GETs the card with the guarded client, bounded in size.
func (r *Runtime) fetchA2ACard(ctx context.Context, cardURL string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cardURL, nil)
	if err != nil {
		return nil, errBadBackendURL
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", r.opts.UserAgent)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e := statusError(agent.BackendA2A, resp, "")
		e.Public = "could not fetch the agent card (" + e.Public + ")"
		return nil, e
	}
	raw, err := io.ReadAll(newCapReader(resp.Body, maxA2ACardBytes, nil))
	if errors.Is(err, agent.ErrReplyTooLarge) {
		return nil, &BackendError{Kind: agent.ErrReplyTooLarge, Backend: agent.BackendA2A, Public: "the agent card exceeds " + sizeText(maxA2ACardBytes), Err: err}
	}
	return raw, err
}

// cardWire is the part of an agent card the backend reads, in both
// shapes: A2A 1.0 (supportedInterfaces) and 0.3 (url, preferredTransport,
// additionalInterfaces).
type cardWire struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Version      string `json:"version"`
	Capabilities struct {
		Streaming bool `json:"streaming"`
	} `json:"capabilities"`
	Skills              []a2a.AgentSkill `json:"skills"`
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
		Tenant          string `json:"tenant"`
	} `json:"supportedInterfaces"`
	URL                  string `json:"url"`
	ProtocolVersion      string `json:"protocolVersion"`
	PreferredTransport   string `json:"preferredTransport"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`
	SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
}

// readA2ACard parses a card, verifies its signature and picks its
// interface.
func (r *Runtime) readA2ACard(raw []byte, cardURL string) (A2ACardInfo, a2aCard, error) {
	var w cardWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return A2ACardInfo{}, a2aCard{}, &BackendError{Kind: agent.ErrBadBackendReply, Backend: agent.BackendA2A, Public: "the agent card is not valid JSON", Err: err}
	}
	signer, err := cardsig.Verify(raw)
	if err != nil && !errors.Is(err, cardsig.ErrUnsigned) {
		return A2ACardInfo{}, a2aCard{}, &BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendA2A,
			Public: "the agent card's signature is refused: " + strings.TrimPrefix(err.Error(), "agent card: "), Err: err}
	}
	if _, err := cardsig.VerifyHostRecord(raw, r.a2a.now()); err != nil && !errors.Is(err, cardsig.ErrNoHostRecord) {
		// An AgentSite card of an agent hosted on another node: its
		// host's signed record must say what the card says.
		return A2ACardInfo{}, a2aCard{}, &BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendA2A,
			Public: "the agent card's host record is refused: " + strings.TrimPrefix(err.Error(), "agent card: "), Err: err}
	}
	if signer != "" {
		// A signature covers the 1.0 members only (cardsig): what 0.3
		// says beside them is not trusted.
		w.URL, w.PreferredTransport, w.AdditionalInterfaces = "", "", nil
	}
	c := a2aCard{streaming: w.Capabilities.Streaming, signer: signer, keyHeader: apiKeyHeader(w.SecuritySchemes, signer != "")}
	if err := r.pickA2AInterface(&c, &w, cardURL); err != nil {
		return A2ACardInfo{}, a2aCard{}, err
	}
	c.keySite = sameSite(c.endpoint, cardURL)
	info := A2ACardInfo{
		Card: &a2a.AgentCard{Name: w.Name, Description: w.Description, Version: w.Version, URL: c.endpoint,
			PreferredTransport: a2a.TransportProtocol(c.binding), Skills: w.Skills,
			Capabilities: a2a.AgentCapabilities{Streaming: w.Capabilities.Streaming}},
		Signer: signer, Binding: c.binding, Version: "0.3",
	}
	if c.v1 {
		info.Version = "1.0"
	}
	return info, c, nil
}

// pickA2AInterface sets c's interface: the first 1.0 JSON-RPC or
// HTTP+JSON entry of supportedInterfaces, else the card's 0.3 JSON-RPC
// interface (its url when its preferredTransport is JSONRPC, the 0.3
// default when absent, else the first JSONRPC additionalInterfaces entry).
func (r *Runtime) pickA2AInterface(c *a2aCard, w *cardWire, cardURL string) error {
	type cand struct {
		url, binding, tenant string
		v1                   bool
	}
	var v1s, v03s []cand
	var offered []string
	for _, in := range w.SupportedInterfaces {
		b := strings.ToUpper(strings.TrimSpace(in.ProtocolBinding))
		v1 := strings.HasPrefix(in.ProtocolVersion, "1.") || in.ProtocolVersion == "1" || in.ProtocolVersion == ""
		switch {
		case in.URL == "":
		case v1 && (b == bindingJSONRPC || b == bindingREST):
			v1s = append(v1s, cand{in.URL, b, in.Tenant, true})
		case b == bindingJSONRPC && strings.HasPrefix(in.ProtocolVersion, "0."):
			v03s = append(v03s, cand{in.URL, b, "", false})
		default:
			offered = append(offered, in.ProtocolBinding+" "+in.ProtocolVersion)
		}
	}
	legacy := []a2a.AgentInterface{{Transport: a2a.TransportProtocol(w.PreferredTransport), URL: w.URL}}
	for _, in := range w.AdditionalInterfaces {
		legacy = append(legacy, a2a.AgentInterface{Transport: a2a.TransportProtocol(in.Transport), URL: in.URL})
	}
	for i, in := range legacy {
		if i == 0 && in.Transport == "" {
			in.Transport = a2a.TransportProtocolJSONRPC
		}
		if in.URL == "" {
			continue
		}
		if strings.EqualFold(string(in.Transport), bindingJSONRPC) {
			v03s = append(v03s, cand{in.URL, bindingJSONRPC, "", false})
			continue
		}
		offered = append(offered, string(in.Transport))
	}
	all := append(v1s, v03s...)
	if len(all) == 0 {
		public := "the agent card offers no JSON-RPC or HTTP+JSON interface"
		if len(offered) > 0 {
			public += ", only " + strings.Join(offered, ", ")
		}
		return kindError(agent.ErrBackendRejected, agent.BackendA2A, public)
	}
	endpoint, err := r.checkA2AEndpoint(all[0].url, cardURL)
	if err != nil {
		return err
	}
	c.endpoint, c.binding, c.tenant, c.v1 = endpoint, all[0].binding, all[0].tenant, all[0].v1
	return nil
}

// apiKeyHeader is the header an apiKey security scheme of the card names
// (0.3: {"type":"apiKey","in":"header","name":…}; 1.0:
// {"apiKeySecurityScheme":{"location":"header","name":…}}, the only form
// read from a signed card); "" when the card has none, for a bearer token.
func apiKeyHeader(schemes map[string]json.RawMessage, v1Only bool) string {
	for _, raw := range schemes {
		var s struct {
			Type string `json:"type"`
			In   string `json:"in"`
			Name string `json:"name"`
			V1   *struct {
				Location string `json:"location"`
				Name     string `json:"name"`
			} `json:"apiKeySecurityScheme"`
		}
		if json.Unmarshal(raw, &s) != nil {
			continue
		}
		switch {
		case s.V1 != nil:
			s.Type, s.In, s.Name = "apiKey", s.V1.Location, s.V1.Name
		case v1Only:
			continue
		}
		if strings.EqualFold(s.Type, "apiKey") && strings.EqualFold(s.In, "header") && validHeaderName(s.Name) {
			return http.CanonicalHeaderKey(s.Name)
		}
	}
	return ""
}

// validHeaderName: a token (RFC 9110), not one the client owns.
func validHeaderName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "host", "content-length", "content-type", "transfer-encoding", "connection", "cookie", "user-agent", "accept":
		return false
	}
	return true
}

// sameSite reports whether endpoint is on cardURL's site: the same host,
// or the same registrable domain (public suffix + 1). A card that moves
// its endpoint to another site does not get the backend's key.
func sameSite(endpoint, cardURL string) bool {
	e, err1 := url.Parse(endpoint)
	c, err2 := url.Parse(cardURL)
	if err1 != nil || err2 != nil {
		return false
	}
	eh, ch := strings.ToLower(e.Hostname()), strings.ToLower(c.Hostname())
	if eh == ch {
		return true
	}
	if _, err := netip.ParseAddr(eh); err == nil {
		return false
	}
	ed, err1 := publicsuffix.EffectiveTLDPlusOne(eh)
	cd, err2 := publicsuffix.EffectiveTLDPlusOne(ch)
	return err1 == nil && err2 == nil && ed == cd
}

// checkA2AEndpoint resolves the card's interface URL against the card's
// own and applies the registration rules to it: http(s) without
// credentials, https unless private endpoints are allowed, and no local or
// private host by name or literal address. The guarded client checks the
// resolved address again when it dials.
func (r *Runtime) checkA2AEndpoint(raw, cardURL string) (string, error) {
	base, err := url.Parse(cardURL)
	if err != nil {
		return "", errBadBackendURL
	}
	ref, err := url.Parse(raw)
	if err != nil {
		return "", kindError(agent.ErrBadBackendReply, agent.BackendA2A, "the agent card's url is not a URL")
	}
	u := base.ResolveReference(ref)
	switch {
	case agent.CheckHTTPURL(u.String()) != nil:
		return "", kindError(agent.ErrBadBackendReply, agent.BackendA2A, "the agent card's url is not a usable http(s) URL")
	case u.Scheme != "https" && !r.opts.AllowPrivate && !r.opts.Allow.admitsURL(u):
		return "", kindError(agent.ErrBlockedAddress, agent.BackendA2A, "the agent card's url does not use https")
	}
	if err := r.opts.policy().CheckURL(u.String()); err != nil {
		return "", &BackendError{Kind: agent.ErrBlockedAddress, Backend: agent.BackendA2A, Public: "the agent card's url is not a public address", Err: err}
	}
	return u.String(), nil
}
