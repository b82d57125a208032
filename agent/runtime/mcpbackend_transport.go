package runtime

import (
	"context"
	"mime"
	"net/http"
	"sync"

	"github.com/agentsite/agentsite/agent"
)

// mcpCallState is what the HTTP layer saw during one MCP call, which
// mcp-go's errors do not always carry: the last error status, and whether
// a body was cut at the size limit (an SSE reader only reports "no
// response" then).
type mcpCallState struct {
	key      string // the backend's API key, to redact from upstream text
	mu       sync.Mutex
	status   int
	tooLarge bool
	badType  bool // a POST answered 200 with neither JSON nor an event stream
}

func (s *mcpCallState) setStatus(code int) {
	s.mu.Lock()
	s.status = code
	s.mu.Unlock()
}

func (s *mcpCallState) setTooLarge() {
	s.mu.Lock()
	s.tooLarge = true
	s.mu.Unlock()
}

func (s *mcpCallState) setBadType() {
	s.mu.Lock()
	s.badType = true
	s.mu.Unlock()
}

func (s *mcpCallState) get() (status int, tooLarge, badType bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.tooLarge, s.badType
}

type mcpStateKey struct{}

// withMCPState attaches s to the requests mcp-go makes under ctx.
func withMCPState(ctx context.Context, s *mcpCallState) context.Context {
	return context.WithValue(ctx, mcpStateKey{}, s)
}

// mcpTransport sits between mcp-go and the guarded transport: it turns 429
// and 5xx into classified errors (mcp-go reports them as plain text),
// records other error statuses, and caps every response body.
type mcpTransport struct {
	base    http.RoundTripper
	maxBody int64
}

func (t *mcpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	st, _ := req.Context().Value(mcpStateKey{}).(*mcpCallState)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		key := ""
		if st != nil {
			key = st.key
		}
		e := statusError(agent.BackendMCP, resp, key)
		resp.Body.Close()
		return nil, e
	}
	if st != nil {
		if resp.StatusCode >= 400 {
			st.setStatus(resp.StatusCode)
		}
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); req.Method == http.MethodPost && resp.StatusCode == http.StatusOK && mt != "application/json" && mt != "text/event-stream" {
			st.setBadType()
		}
	}
	var onHit func()
	if st != nil {
		onHit = st.setTooLarge
	}
	resp.Body = capReadCloser{newCapReader(resp.Body, t.maxBody, onHit), resp.Body}
	return resp, nil
}
