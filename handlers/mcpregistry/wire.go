package mcpregistry

import (
	"encoding/json"
	"strconv"

	"github.com/agentsite/agentsite/handlers/apiwire"
)

// appendList appends the JSON of out as json.Encoder (HTML escaped, a
// newline after) writes it, without reflection (TestAppendListIsEncode
// holds the bytes to encoding/json's). The handler wrote its pages so
// before appendPage, which writes each server without its struct; the
// tests hold appendPage to appendList's bytes (appendServer still writes
// a listing appendPage leaves to the structs).
func appendList(dst []byte, out *serverList) ([]byte, error) {
	dst = append(dst, `{"servers":[`...)
	for i := range out.Servers {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendServer(dst, &out.Servers[i]); err != nil {
			return nil, err
		}
	}
	dst = append(dst, ']')
	return appendMetadata(dst, out.Metadata), nil
}

// appendServer appends the JSON of s as encoding/json writes it.
func appendServer(dst []byte, s *server) ([]byte, error) {
	d := &s.Server
	dst = append(dst, `{"server":{`...)
	if d.Schema != "" {
		dst = append(dst, `"$schema":`...)
		dst = appendString(dst, d.Schema)
		dst = append(dst, ',')
	}
	dst = append(dst, `"name":`...)
	dst = appendString(dst, d.Name)
	if d.Title != "" {
		dst = append(dst, `,"title":`...)
		dst = appendString(dst, d.Title)
	}
	dst = append(dst, `,"description":`...)
	dst = appendString(dst, d.Description)
	dst = append(dst, `,"version":`...)
	dst = appendString(dst, d.Version)
	if d.WebsiteURL != "" {
		dst = append(dst, `,"websiteUrl":`...)
		dst = appendString(dst, d.WebsiteURL)
	}
	if len(d.Remotes) > 0 {
		dst = append(dst, `,"remotes":[`...)
		for i, r := range d.Remotes {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":`...)
			dst = appendString(dst, r.Type)
			dst = append(dst, `,"url":`...)
			dst = appendString(dst, r.URL)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if len(d.Packages) > 0 {
		b, err := json.Marshal(d.Packages)
		if err != nil {
			return nil, err
		}
		dst = append(dst, `,"packages":`...)
		dst = append(dst, b...)
	}
	if d.Meta != nil {
		var err error
		dst = append(dst, `,"_meta":{"io.agentsite/agent":`...)
		if dst, err = appendAgentMeta(dst, &d.Meta.Agent); err != nil {
			return nil, err
		}
		dst = append(dst, '}')
	}
	dst = append(dst, '}')
	if s.Meta != nil {
		o := &s.Meta.Official
		dst = append(dst, `,"_meta":{"io.modelcontextprotocol.registry/official":{"isLatest":`...)
		dst = strconv.AppendBool(dst, o.IsLatest)
		dst = append(dst, `,"publishedAt":`...)
		dst = appendString(dst, o.PublishedAt)
		dst = append(dst, `,"status":`...)
		dst = appendString(dst, o.Status)
		dst = append(dst, `,"updatedAt":`...)
		dst = appendString(dst, o.UpdatedAt)
		dst = append(dst, "}}"...)
	}
	return append(dst, '}'), nil
}

// appendAgentMeta appends the JSON of m as encoding/json writes it.
func appendAgentMeta(dst []byte, m *agentMeta) ([]byte, error) {
	dst = append(dst, '{')
	if m.A2ACard != "" {
		dst = append(dst, `"a2a_card":`...)
		dst = appendString(dst, m.A2ACard)
		dst = append(dst, ',')
	}
	dst = append(dst, `"agentsite_name":`...)
	dst = appendString(dst, m.AgentsiteName)
	dst = append(dst, `,"description_placeholder":`...)
	dst = strconv.AppendBool(dst, m.DescriptionPlaceholder)
	dst = append(dst, `,"health":`...)
	dst = appendString(dst, m.Health)
	dst = append(dst, `,"host":`...)
	dst = appendString(dst, m.Host)
	if m.Hosted != nil {
		dst = append(dst, `,"hosted":`...)
		dst = strconv.AppendBool(dst, *m.Hosted)
	}
	dst = append(dst, `,"how_to_use":`...)
	dst = appendString(dst, m.HowToUse)
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, m.ID)
	if m.Install != "" {
		dst = append(dst, `,"install":`...)
		dst = appendString(dst, m.Install)
	}
	if f := m.ListedFrom; f != nil {
		dst = append(dst, `,"listed_from":{"listed_by":`...)
		dst = appendString(dst, f.ListedBy)
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, f.Name)
		dst = append(dst, `,"registry":`...)
		dst = appendString(dst, f.Registry)
		dst = append(dst, `,"version":`...)
		dst = appendString(dst, f.Version)
		dst = append(dst, '}')
	}
	if m.MCPTool != "" {
		dst = append(dst, `,"mcp_tool":`...)
		dst = appendString(dst, m.MCPTool)
	}
	dst = append(dst, `,"origin":`...)
	if m.Origin == nil {
		dst = append(dst, "null"...)
	} else {
		b, err := json.Marshal(m.Origin)
		if err != nil {
			return nil, err
		}
		dst = append(dst, b...)
	}
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, m.Status)
	dst = append(dst, `,"tags":`...)
	if m.Tags == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, t := range m.Tags {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, t)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// appendString appends s as a JSON string as encoding/json does
// (apiwire.AppendString, which the API's pages use too).
func appendString(dst []byte, s string) []byte { return apiwire.AppendString(dst, s) }
