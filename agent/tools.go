package agent

import (
	"fmt"
	"net/textproto"
	"strings"
	"unicode/utf8"
)

// ToolServer is one source of tools for an llm agent (Backend.Tools):
// either an MCP server over Streamable HTTP (URL, and optionally a header
// carrying a secret), or an agent of the planet by its id. Secret is
// stored with the backend like the model's API key is: never rendered
// back, never logged.
type ToolServer struct {
	URL    string `json:"url,omitempty"`
	Header string `json:"header,omitempty"`
	Secret string `json:"secret,omitempty"`
	Agent  string `json:"agent,omitempty"`
	// Allow names the server's tools the owner lets the agent call
	// without asking the sender ("*": all of them). Any other tool that
	// is not read-only (its readOnlyHint), and an agent's send_message,
	// waits for the sender's approval (docs/agents.md, "Tools and
	// approvals").
	Allow []string `json:"allow,omitempty"`
}

// AllowAll in ToolServer.Allow lets every tool of the server run unasked.
const AllowAll = "*"

// MaxAllowedTools bounds ToolServer.Allow.
const MaxAllowedTools = 64

// Allows reports whether the owner lets tool run without asking.
func (t ToolServer) Allows(tool string) bool {
	for _, a := range t.Allow {
		if a == AllowAll || a == tool {
			return true
		}
	}
	return false
}

// MaxToolServers bounds Backend.Tools: every server's tools are offered to
// the model at each turn, and each list costs a request.
const MaxToolServers = 8

// DefaultToolHeader carries a tool server's secret when no header is named.
const DefaultToolHeader = "Authorization"

// reservedToolHeaders are the headers the MCP transport sets itself.
var reservedToolHeaders = map[string]bool{
	"Host": true, "Content-Type": true, "Content-Length": true, "Accept": true,
	"Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Last-Event-Id": true,
	"Connection": true, "Transfer-Encoding": true, "User-Agent": true, "Cookie": true,
}

// HeaderName is the header that carries the secret: Header, or
// Authorization when none is named.
func (t ToolServer) HeaderName() string {
	if strings.TrimSpace(t.Header) == "" {
		return DefaultToolHeader
	}
	return textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(t.Header))
}

// HeaderValue is what the header carries: the secret as given, or for
// Authorization a bare token sent as "Bearer <token>".
func (t ToolServer) HeaderValue() string {
	if t.HeaderName() == DefaultToolHeader && !strings.Contains(strings.TrimSpace(t.Secret), " ") {
		return "Bearer " + strings.TrimSpace(t.Secret)
	}
	return strings.TrimSpace(t.Secret)
}

// String keeps the secret out of logs.
func (t ToolServer) String() string {
	if t.Agent != "" {
		return "agent:" + t.Agent
	}
	if t.Secret != "" {
		return t.URL + " (" + t.HeaderName() + ": [redacted])"
	}
	return t.URL
}

// validateTools checks Backend.Tools: keys "backend.tools" for the list
// and "backend.tools[i].field" for one entry.
func validateTools(ve *ValidationError, b Backend) {
	if len(b.Tools) == 0 {
		return
	}
	if b.Kind != BackendLLM {
		ve.add("backend.tools", "only an llm agent can use tools; remove them or choose kind llm")
		return
	}
	if len(b.Tools) > MaxToolServers {
		ve.add("backend.tools", "at most %d tool servers, got %d; keep the ones the agent needs", MaxToolServers, len(b.Tools))
		return
	}
	seen := map[string]int{}
	for i, t := range b.Tools {
		key := fmt.Sprintf("backend.tools[%d]", i)
		url, id := strings.TrimSpace(t.URL), strings.TrimSpace(t.Agent)
		if !validAllow(ve, key+".allow", t.Allow) {
			continue
		}
		switch {
		case url != "" && id != "":
			ve.add(key, "give either url (an MCP server) or agent (an agent id), not both")
			continue
		case url == "" && id == "":
			ve.add(key, `give url (an MCP server, e.g. {"url": "https://example.com/mcp"}) or agent (an agent id)`)
			continue
		case id != "":
			if !ValidID(id) {
				ve.add(key+".agent", "is not an agent id (52 characters a-z, 2-7; copy it from the agent's page)")
				continue
			}
			if t.Header != "" || t.Secret != "" {
				ve.add(key+".secret", "an agent is reached by the node itself: it takes no header or secret")
				continue
			}
			if j, dup := seen["agent:"+id]; dup {
				ve.add(key+".agent", "repeats tools[%d]", j)
				continue
			}
			seen["agent:"+id] = i
			continue
		}
		if err := CheckHTTPURL(url); err != nil {
			ve.add(key+".url", "%v", err)
			continue
		}
		if j, dup := seen["url:"+url]; dup {
			ve.add(key+".url", "repeats tools[%d]", j)
			continue
		}
		seen["url:"+url] = i
		if h := strings.TrimSpace(t.Header); h != "" {
			if !headerToken(h) {
				ve.add(key+".header", "must be an HTTP header name (letters, digits and -), e.g. Authorization or X-API-Key")
				continue
			}
			if reservedToolHeaders[textproto.CanonicalMIMEHeaderKey(h)] {
				ve.add(key+".header", "%s is set by the MCP client itself; use Authorization or an X- header", textproto.CanonicalMIMEHeaderKey(h))
				continue
			}
			if t.Secret == "" {
				ve.add(key+".secret", "is required when a header is named")
				continue
			}
		}
		checkText(ve, key+".secret", t.Secret, 1024, true)
	}
}

// validAllow checks a ToolServer.Allow list: tool names as the server
// gives them (no spaces), or "*".
func validAllow(ve *ValidationError, key string, allow []string) bool {
	if len(allow) > MaxAllowedTools {
		ve.add(key, "at most %d tools, got %d; use \"*\" to allow all of the server's tools", MaxAllowedTools, len(allow))
		return false
	}
	seen := map[string]bool{}
	for _, a := range allow {
		switch {
		case a == "" || len(a) > 128 || strings.ContainsAny(a, " \t\r\n,") || !utf8.ValidString(a):
			ve.add(key, "%q is not a tool name: give the names the server lists (e.g. search_notes), or \"*\" for all", short(a))
			return false
		case seen[a]:
			ve.add(key, "names %q twice", a)
			return false
		}
		seen[a] = true
	}
	return true
}

// headerToken reports an RFC 9110 field name.
func headerToken(s string) bool {
	if len(s) > 100 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}

// KeepToolSecrets is tools with each blank secret filled from old's entry
// for the same URL and header: forms never render a secret back, so a
// blank one means "keep the stored one".
func KeepToolSecrets(tools, old []ToolServer) []ToolServer {
	if len(tools) == 0 || len(old) == 0 {
		return tools
	}
	out := make([]ToolServer, len(tools))
	copy(out, tools)
	for i, t := range out {
		if t.URL == "" || t.Secret != "" {
			continue
		}
		for _, o := range old {
			if o.URL == t.URL && o.Secret != "" && (t.Header == "" || t.HeaderName() == o.HeaderName()) {
				out[i].Header, out[i].Secret = o.Header, o.Secret
				break
			}
		}
	}
	return out
}

// short is s cut for an error message.
func short(s string) string {
	if len(s) <= 40 {
		return s
	}
	return strings.ToValidUTF8(s[:40], "") + "…"
}
