package cardsig

import "strings"

// The signed form keeps only what A2A 1.0's AgentCard message defines
// (a2a.proto), as the official SDKs do before they canonicalize: @a2a-js/sdk
// 1.3.0 passes a card through AgentCard.fromJSON/toJSON, which drops every
// member the message does not know (a 0.3 card's url, preferredTransport,
// protocolVersion, a 0.3 security scheme's type/in/scheme), and a
// non-optional false. A member outside the schema is therefore not signed:
// a reader of a signed card uses only the 1.0 members (supportedInterfaces,
// not url).

// kind is how a field's value is normalized.
type kind int

const (
	kScalar kind = iota // string, or an optional bool: kept as is
	kBool               // a non-optional bool: false is the default, dropped
	kList               // repeated string: kept as is
	kMsg                // a nested message
	kMsgs               // repeated message
	kMsgMap             // map<string, message>
	kAny                // google.protobuf.Struct, map<string,string>: kept as is when an object
)

type field struct {
	name string // JSON (camelCase) name; the snake_case one is accepted too
	kind kind
	msg  *message
}

type message struct {
	fields []field
	oneof  bool // only the first field that is set is kept
}

var (
	stringList          = &message{fields: []field{{"list", kList, nil}}}
	securityRequirement = &message{fields: []field{{"schemes", kMsgMap, stringList}}}
	agentInterface      = &message{fields: []field{{"url", kScalar, nil}, {"protocolBinding", kScalar, nil}, {"tenant", kScalar, nil}, {"protocolVersion", kScalar, nil}}}
	agentProvider       = &message{fields: []field{{"url", kScalar, nil}, {"organization", kScalar, nil}}}
	agentExtension      = &message{fields: []field{{"uri", kScalar, nil}, {"description", kScalar, nil}, {"required", kBool, nil}, {"params", kAny, nil}}}
	agentCapabilities   = &message{fields: []field{{"streaming", kScalar, nil}, {"pushNotifications", kScalar, nil}, {"extensions", kMsgs, agentExtension}, {"extendedAgentCard", kScalar, nil}}}
	agentSkill          = &message{fields: []field{{"id", kScalar, nil}, {"name", kScalar, nil}, {"description", kScalar, nil}, {"tags", kList, nil},
		{"examples", kList, nil}, {"inputModes", kList, nil}, {"outputModes", kList, nil}, {"securityRequirements", kMsgs, securityRequirement}}}
	apiKeyScheme = &message{fields: []field{{"description", kScalar, nil}, {"location", kScalar, nil}, {"name", kScalar, nil}}}
	httpScheme   = &message{fields: []field{{"description", kScalar, nil}, {"scheme", kScalar, nil}, {"bearerFormat", kScalar, nil}}}
	oidcScheme   = &message{fields: []field{{"description", kScalar, nil}, {"openIdConnectUrl", kScalar, nil}}}
	mtlsScheme   = &message{fields: []field{{"description", kScalar, nil}}}
	authCodeFlow = &message{fields: []field{{"authorizationUrl", kScalar, nil}, {"tokenUrl", kScalar, nil}, {"refreshUrl", kScalar, nil}, {"scopes", kAny, nil}, {"pkceRequired", kBool, nil}}}
	clientFlow   = &message{fields: []field{{"tokenUrl", kScalar, nil}, {"refreshUrl", kScalar, nil}, {"scopes", kAny, nil}}}
	implicitFlow = &message{fields: []field{{"authorizationUrl", kScalar, nil}, {"refreshUrl", kScalar, nil}, {"scopes", kAny, nil}}}
	passwordFlow = &message{fields: []field{{"tokenUrl", kScalar, nil}, {"refreshUrl", kScalar, nil}, {"scopes", kAny, nil}}}
	deviceFlow   = &message{fields: []field{{"deviceAuthorizationUrl", kScalar, nil}, {"tokenUrl", kScalar, nil}, {"refreshUrl", kScalar, nil}, {"scopes", kAny, nil}}}
	oauthFlows   = &message{oneof: true, fields: []field{{"authorizationCode", kMsg, authCodeFlow}, {"clientCredentials", kMsg, clientFlow},
		{"implicit", kMsg, implicitFlow}, {"password", kMsg, passwordFlow}, {"deviceCode", kMsg, deviceFlow}}}
	oauth2Scheme   = &message{fields: []field{{"description", kScalar, nil}, {"flows", kMsg, oauthFlows}, {"oauth2MetadataUrl", kScalar, nil}}}
	securityScheme = &message{oneof: true, fields: []field{{"apiKeySecurityScheme", kMsg, apiKeyScheme}, {"httpAuthSecurityScheme", kMsg, httpScheme},
		{"oauth2SecurityScheme", kMsg, oauth2Scheme}, {"openIdConnectSecurityScheme", kMsg, oidcScheme}, {"mtlsSecurityScheme", kMsg, mtlsScheme}}}
	agentCard = &message{fields: []field{{"name", kScalar, nil}, {"description", kScalar, nil}, {"supportedInterfaces", kMsgs, agentInterface},
		{"provider", kMsg, agentProvider}, {"version", kScalar, nil}, {"documentationUrl", kScalar, nil}, {"capabilities", kMsg, agentCapabilities},
		{"securitySchemes", kMsgMap, securityScheme}, {"securityRequirements", kMsgs, securityRequirement}, {"defaultInputModes", kList, nil},
		{"defaultOutputModes", kList, nil}, {"skills", kMsgs, agentSkill}, {"iconUrl", kScalar, nil}}}
)

// snake is a camelCase name in snake_case ("supportedInterfaces" →
// "supported_interfaces"), the other name proto JSON readers accept.
func snake(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'A' && c <= 'Z' {
			b.WriteByte('_')
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// normalize keeps the members of v that m defines, under their camelCase
// names (the same value under both names: the camelCase one wins).
func normalize(v any, m *message) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]any{}
	for _, f := range m.fields {
		val, ok := obj[f.name]
		if !ok || val == nil {
			val, ok = obj[snake(f.name)]
		}
		if !ok || val == nil {
			continue
		}
		var n any
		switch f.kind {
		case kScalar, kList:
			n = val
		case kBool:
			if b, isBool := val.(bool); isBool && !b {
				continue
			}
			n = val
		case kAny:
			if _, isObj := val.(map[string]any); isObj {
				n = val
			}
		case kMsg:
			n = normalize(val, f.msg)
		case kMsgs:
			if list, isList := val.([]any); isList {
				items := make([]any, 0, len(list))
				for _, it := range list {
					items = append(items, normalize(it, f.msg))
				}
				n = items
			}
		case kMsgMap:
			if mm, isObj := val.(map[string]any); isObj {
				items := make(map[string]any, len(mm))
				for k, it := range mm {
					items[k] = normalize(it, f.msg)
				}
				n = items
			}
		}
		if n == nil {
			continue
		}
		out[f.name] = n
		if m.oneof {
			break
		}
	}
	return out
}
