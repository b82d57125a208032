package cardsig

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// HostRecordURI names the card extension that carries, on the card a node
// serves for an agent hosted on another node, the host's own signed
// listing record of that agent. The serving node's JWS binds it to its
// url and covers the extension (params are among the signed members), and
// the record is the host's libp2p signature over what it claims: name,
// description, skills, tags, version, owner.
const HostRecordURI = "https://agentsite.dev/ext/host-record/v1"

// HostRecordParams are the extension's params: host, the host's peer id;
// record, the signed envelope (standard base64) as the host published it
// (a libp2p record envelope: Ed25519, domain agent.PayloadDomain, payload
// type agent.PayloadCodec).
const (
	HostRecordParamHost   = "host"
	HostRecordParamRecord = "record"
)

var (
	ErrNoHostRecord  = errors.New("agent card: no host record (the card is the serving node's own agent's, or not an AgentSite card)")
	ErrHostMismatch  = errors.New("agent card: the host record was not signed by the host the card names")
	ErrClaimMismatch = errors.New("agent card: the card says what its host's signed record does not")
)

// HostRecordExtension is the extension for the card of an agent hosted
// elsewhere, from the envelope this node holds of it.
func HostRecordExtension(hostPeerID string, envelope []byte) map[string]any {
	return map[string]any{
		"uri": HostRecordURI,
		"description": "The host node's own signed listing record of this agent (libp2p signed envelope, Ed25519, " +
			"domain " + agent.PayloadDomain + "): verify it against the host's peer id to check the host's own claims.",
		"params": map[string]any{
			HostRecordParamHost:   hostPeerID,
			HostRecordParamRecord: base64.StdEncoding.EncodeToString(envelope),
		},
	}
}

// BearerHelp describes the one security scheme a node's A2A cards offer:
// anonymous callers, or a bearer token that makes the caller's tasks its
// own and opens the extended card. It lives here because a card carrying
// a host record may offer that scheme and no other (VerifyHostRecord).
const BearerHelp = "Optional. Authorization: Bearer <the node operator's token, or an API token of an account on this node>: " +
	"your tasks and contexts are then your own (ListTasks lists them; no other caller reads them), and " +
	"GetExtendedAgentCard answers. Without it, a task id is the capability to read or cancel that task."

// NodeSecuritySchemes is the securitySchemes member of a node's A2A cards:
// the bearer scheme in A2A 0.3's OpenAPI shape and 1.0's
// (httpAuthSecurityScheme), or in 1.0's alone (v1Only). No scheme is
// required, so the cards list no security requirement.
func NodeSecuritySchemes(v1Only bool) map[string]any {
	v1 := map[string]any{"scheme": "Bearer", "description": BearerHelp}
	if v1Only {
		return map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": v1}}
	}
	return map[string]any{"bearer": map[string]any{
		"type": "http", "scheme": "bearer", "description": BearerHelp, "httpAuthSecurityScheme": v1,
	}}
}

// NodeTextModes are the input and output modes of a node's A2A cards.
var NodeTextModes = []string{"text/plain"}

// HostSkill is one skill of a card as its host's record says it.
type HostSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

// HostSkills is the skills of an agent's card as its record says them
// (each with the agent's tags, and its description when it has none;
// the agent as its own one skill when it declares none): what a node's
// card shows and what VerifyHostRecord holds a card to.
func HostSkills(rec *agent.Record) []HostSkill {
	tags := rec.Tags
	if tags == nil {
		tags = []string{}
	}
	var out []HostSkill
	for _, sk := range rec.Skills {
		desc := sk.Description
		if desc == "" {
			desc = rec.Description
		}
		out = append(out, HostSkill{ID: sk.ID, Name: sk.Name, Description: desc, Tags: tags, Examples: sk.Examples})
	}
	if len(out) == 0 {
		out = []HostSkill{{ID: rec.Name, Name: rec.DisplayName, Description: rec.Description, Tags: tags}}
	}
	return out
}

// CallerTasksSkill is the skill a node's extended card adds for an
// authenticated caller, also on the card of an agent hosted elsewhere:
// the node's, not the host's, so VerifyHostRecord accepts it, exactly
// this, as the last skill.
var CallerTasksSkill = HostSkill{ID: "my_tasks", Name: "Your tasks",
	Description: "You are authenticated: ListTasks lists the tasks you made here (the last hour's, newest first), " +
		"and no other caller can read or cancel them.", Tags: []string{"tasks"}}

// HostVersion is the version a card shows of an agent: its record's, or
// the record's revision when it names none.
func HostVersion(rec *agent.Record) string {
	if rec.Version != "" {
		return rec.Version
	}
	return strconv.FormatUint(rec.Seq, 10)
}

// HostProvider is the provider organization a node's card names for an
// agent hosted by host.
func HostProvider(host string) string {
	if len(host) > 8 {
		host = host[len(host)-8:]
	}
	return "AgentSite node " + host
}

// cardMembers03 are the A2A 0.3 members a node's card carries beside
// 1.0's (the schema's, in either spelling), and signatures: any other
// member on a card with a host record is refused.
var cardMembers03 = []string{"url", "preferredTransport", "protocolVersion", "additionalInterfaces", "supportsAuthenticatedExtendedCard", "signatures"}

// VerifyHostRecord checks a card's host record: the envelope's signature,
// the record not expired at now, its signer being the host the params
// name, and every member of the card being either the record's or what a
// node derives from it. The record's: name (its display name),
// description, version, and the skills (HostSkills: ids, names,
// descriptions, tags, examples, in order). The serving node's: its one
// endpoint (every interface url, ending in /a2a/<id>), the provider and
// documentation url at that endpoint's base, text modes, the
// capabilities with the host record as the one extension, and its bearer
// scheme (NodeSecuritySchemes) with no requirement. Anything else, an
// icon, another scheme, a member this code does not know, is refused: a
// mirror cannot add to what the host said.
// ErrNoHostRecord: the card carries none.
func VerifyHostRecord(card []byte, now time.Time) (*agent.Record, error) {
	if len(card) > MaxCardBytes {
		return nil, ErrTooLarge
	}
	var c struct {
		Capabilities struct {
			Extensions []struct {
				URI    string          `json:"uri"`
				Params json.RawMessage `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var params json.RawMessage
	for _, e := range c.Capabilities.Extensions {
		if e.URI == HostRecordURI {
			params = e.Params
			break
		}
	}
	if params == nil {
		return nil, ErrNoHostRecord
	}
	var p struct {
		Host   string `json:"host"`
		Record string `json:"record"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("%w: host record params: %v", ErrMalformed, err)
	}
	env, err := base64.StdEncoding.DecodeString(p.Record)
	if err != nil {
		return nil, fmt.Errorf("%w: host record is not base64: %v", ErrMalformed, err)
	}
	rec, err := agent.Open(env, now)
	if err != nil {
		return nil, fmt.Errorf("agent card: host record: %w", err)
	}
	if p.Host == "" || rec.Publisher != p.Host {
		return nil, fmt.Errorf("%w: signed by %s, the card names %q", ErrHostMismatch, rec.Publisher, p.Host)
	}
	if err := matchesRecord(card, rec, p.Host, env); err != nil {
		return nil, err
	}
	return rec, nil
}

// matchesRecord holds every member of card to the record or to what a
// node derives from it (VerifyHostRecord).
func matchesRecord(card []byte, rec *agent.Record, host string, env []byte) error {
	var raw map[string]any
	if err := json.Unmarshal(card, &raw); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	known := map[string]bool{}
	for _, f := range agentCard.fields {
		known[f.name], known[snake(f.name)] = true, true
	}
	for _, m := range cardMembers03 {
		known[m] = true
	}
	for k := range raw {
		if !known[k] {
			return fmt.Errorf("%w: member %q is neither the host's nor the serving node's", ErrClaimMismatch, k)
		}
	}
	for _, k := range []string{"securityRequirements", "security_requirements", "iconUrl", "icon_url"} {
		if _, ok := raw[k]; ok { // the node's cards have none, not even an empty one
			return fmt.Errorf("%w: member %q is neither the host's nor the serving node's", ErrClaimMismatch, k)
		}
	}
	endpoint, err := cardEndpoint(raw, rec.ID)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(endpoint, "/a2a/"+rec.ID)
	schemes := raw["securitySchemes"]
	if schemes == nil {
		schemes = raw["security_schemes"]
	}
	if schemes != nil && !sameJSON(schemes, NodeSecuritySchemes(false)) && !sameJSON(schemes, NodeSecuritySchemes(true)) {
		return fmt.Errorf("%w: securitySchemes are not the serving node's", ErrClaimMismatch)
	}
	want := map[string]any{
		"name":                rec.DisplayName,
		"description":         rec.Description,
		"version":             HostVersion(rec),
		"supportedInterfaces": raw["supportedInterfaces"], // checked by cardEndpoint
		"provider":            map[string]any{"organization": HostProvider(host), "url": base},
		"documentationUrl":    base + "/agents/" + rec.ID,
		"capabilities": map[string]any{"streaming": true, "pushNotifications": true, "extendedAgentCard": true,
			"extensions": []any{HostRecordExtension(host, env)}},
		"securitySchemes":    NodeSecuritySchemes(true),
		"defaultInputModes":  NodeTextModes,
		"defaultOutputModes": NodeTextModes,
		"skills":             HostSkills(rec),
	}
	if raw["supportedInterfaces"] == nil {
		want["supportedInterfaces"] = raw["supported_interfaces"]
	}
	if schemes == nil {
		delete(want, "securitySchemes")
	}
	if skills, _ := raw["skills"].([]any); len(skills) > 0 && sameJSON(skills[len(skills)-1], CallerTasksSkill) {
		want["skills"] = append(HostSkills(rec), CallerTasksSkill) // an extended card
	}
	got, exp := prune(normalize(raw, agentCard)), prune(normalize(roundTrip(want), agentCard))
	gm, _ := got.(map[string]any)
	em, _ := exp.(map[string]any)
	// The record's name and description are the card's whether or not
	// it repeats them; every other member the card has must be what the
	// node derives (of capabilities and provider, each part it has).
	for _, k := range []string{"name", "description"} {
		if !reflect.DeepEqual(gm[k], em[k]) {
			return fmt.Errorf("%w: %s", ErrClaimMismatch, k)
		}
	}
	for k, v := range gm {
		e, ok := em[k]
		if !ok {
			return fmt.Errorf("%w: %s is not the host's nor the serving node's", ErrClaimMismatch, k)
		}
		if k == "capabilities" || k == "provider" {
			gv, _ := v.(map[string]any)
			ev, _ := e.(map[string]any)
			for sk, x := range gv {
				if !reflect.DeepEqual(x, ev[sk]) {
					return fmt.Errorf("%w: %s.%s", ErrClaimMismatch, k, sk)
				}
			}
			continue
		}
		if !reflect.DeepEqual(v, e) {
			return fmt.Errorf("%w: %s", ErrClaimMismatch, k)
		}
	}
	return nil
}

// cardEndpoint is the one url every interface of the card names (1.0's
// supportedInterfaces, 0.3's url and additionalInterfaces), which must
// end in /a2a/<id>.
func cardEndpoint(raw map[string]any, id string) (string, error) {
	var urls []any
	if u, ok := raw["url"]; ok {
		urls = append(urls, u)
	}
	for _, k := range []string{"supportedInterfaces", "supported_interfaces", "additionalInterfaces"} {
		list, _ := raw[k].([]any)
		for _, it := range list {
			m, _ := it.(map[string]any)
			urls = append(urls, m["url"])
		}
	}
	endpoint := ""
	for _, u := range urls {
		s, ok := u.(string)
		switch {
		case !ok || s == "":
			return "", fmt.Errorf("%w: an interface without a url", ErrClaimMismatch)
		case endpoint == "":
			endpoint = s
		case s != endpoint:
			return "", fmt.Errorf("%w: interfaces at different urls", ErrClaimMismatch)
		}
	}
	if !strings.HasSuffix(endpoint, "/a2a/"+id) {
		return "", fmt.Errorf("%w: the card's url is not the serving node's endpoint of agent %s", ErrClaimMismatch, id)
	}
	return endpoint, nil
}

// roundTrip is v as encoding/json reads it back (float64s, []any, maps).
func roundTrip(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

func sameJSON(a, b any) bool { return reflect.DeepEqual(roundTrip(a), roundTrip(b)) }
