package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/agentsite/agentsite/agent"
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

// a2aCard is what a turn needs from an agent card.
type a2aCard struct {
	endpoint  string // the JSON-RPC URL
	streaming bool   // capabilities.streaming: message/stream, else message/send
	fetched   time.Time
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

// a2aCardFor returns the card at cardURL, from the cache while it is fresh.
func (r *Runtime) a2aCardFor(ctx context.Context, cardURL string) (a2aCard, error) {
	if c, ok := r.a2a.cards.Get(cardURL); ok && r.a2a.now().Sub(c.fetched) < a2aCardTTL {
		return c, nil
	}
	_, c, err := r.loadA2ACard(ctx, cardURL)
	return c, err
}

// ProbeA2A fetches the agent card at cardURL afresh, through the guarded
// client, and checks that it offers a JSON-RPC interface this node may
// reach: a registration form or a health probe learns whether the agent is
// usable without sending it a message. Errors are classified like Answer's.
func (r *Runtime) ProbeA2A(ctx context.Context, cardURL string) (*a2a.AgentCard, error) {
	tctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	card, _, err := r.loadA2ACard(tctx, cardURL)
	if err != nil {
		return nil, r.classify(ctx, tctx, agent.Backend{Kind: agent.BackendA2A, URL: cardURL}, err)
	}
	return card, nil
}

// loadA2ACard fetches and checks a card, and caches it.
func (r *Runtime) loadA2ACard(ctx context.Context, cardURL string) (*a2a.AgentCard, a2aCard, error) {
	card, err := r.fetchA2ACard(ctx, cardURL)
	if err != nil {
		return nil, a2aCard{}, err
	}
	endpoint, err := r.a2aEndpoint(card, cardURL)
	if err != nil {
		return nil, a2aCard{}, err
	}
	c := a2aCard{endpoint: endpoint, streaming: card.Capabilities.Streaming, fetched: r.a2a.now()}
	r.a2a.cards.Add(cardURL, c)
	return card, c, nil
}

// fetchA2ACard GETs the card with the guarded client, bounded in size.
func (r *Runtime) fetchA2ACard(ctx context.Context, cardURL string) (*a2a.AgentCard, error) {
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
	if err != nil {
		return nil, err
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(raw, &card); err != nil {
		return nil, &BackendError{Kind: agent.ErrBadBackendReply, Backend: agent.BackendA2A, Public: "the agent card is not valid JSON", Err: err}
	}
	return &card, nil
}

// a2aEndpoint picks the card's JSON-RPC interface: its url when its
// preferredTransport is JSONRPC (the A2A 0.3 default when absent), else
// the first JSONRPC entry of additionalInterfaces.
func (r *Runtime) a2aEndpoint(card *a2a.AgentCard, cardURL string) (string, error) {
	ifaces := append([]a2a.AgentInterface{{Transport: card.PreferredTransport, URL: card.URL}}, card.AdditionalInterfaces...)
	var offered []string
	for i, in := range ifaces {
		if i == 0 && in.Transport == "" {
			in.Transport = a2a.TransportProtocolJSONRPC
		}
		if in.URL == "" {
			continue
		}
		if strings.EqualFold(string(in.Transport), string(a2a.TransportProtocolJSONRPC)) {
			return r.checkA2AEndpoint(in.URL, cardURL)
		}
		offered = append(offered, string(in.Transport))
	}
	public := "the agent card offers no JSON-RPC interface"
	if len(offered) > 0 {
		public += ", only " + strings.Join(offered, ", ")
	}
	return "", kindError(agent.ErrBackendRejected, agent.BackendA2A, public)
}

// checkA2AEndpoint resolves the card's JSON-RPC URL against the card's own
// and applies the registration rules to it: http(s) without credentials,
// https unless private endpoints are allowed, and no local or private host
// by name or literal address. The guarded client checks the resolved
// address again when it dials.
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
	case u.Scheme != "https" && !r.opts.AllowPrivate:
		return "", kindError(agent.ErrBlockedAddress, agent.BackendA2A, "the agent card's url does not use https")
	}
	if err := CheckHost(u.String(), r.opts.AllowPrivate); err != nil {
		return "", &BackendError{Kind: agent.ErrBlockedAddress, Backend: agent.BackendA2A, Public: "the agent card's url is not a public address", Err: err}
	}
	return u.String(), nil
}
