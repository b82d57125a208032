package registry

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
)

// Input is what a person supplies to register or edit an agent, from the
// /register form, the JSON API or an import alike.
type Input struct {
	Name        string        `json:"name"`
	DisplayName string        `json:"display_name"`
	Description string        `json:"description"`
	Tags        []string      `json:"tags"`
	Skills      []agent.Skill `json:"skills"`
	Version     string        `json:"version"`
	Backend     agent.Backend `json:"backend"`
	// Origin is an import's upstream identity (agent.Record.Origin).
	Origin *agent.Origin `json:"origin,omitempty"`
}

// normalize trims what people type by accident; it never changes meaning.
func (in *Input) normalize() {
	in.Name = strings.ToLower(strings.TrimSpace(in.Name))
	in.DisplayName = strings.TrimSpace(in.DisplayName)
	in.Description = strings.TrimSpace(strings.ReplaceAll(in.Description, "\r\n", "\n"))
	in.Version = strings.TrimSpace(in.Version)
	tags := in.Tags[:0:0]
	for _, t := range in.Tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			tags = append(tags, t)
		}
	}
	in.Tags = tags
	normalizeBackend(&in.Backend)
}

// normalizeBackend trims the backend's kind and URL.
func normalizeBackend(b *agent.Backend) {
	b.Kind = strings.TrimSpace(b.Kind)
	b.URL = strings.TrimSpace(b.URL)
	for i := range b.Tools {
		t := &b.Tools[i]
		t.URL, t.Agent, t.Header, t.Secret = strings.TrimSpace(t.URL), strings.TrimSpace(t.Agent), strings.TrimSpace(t.Header), strings.TrimSpace(t.Secret)
	}
}

// validate merges record and backend errors into one ValidationError so a
// form shows every problem at once.
func validate(rec *agent.Record, b agent.Backend, now time.Time, backends runtime.Policy) error {
	fields := map[string]string{}
	var ve *agent.ValidationError
	for _, err := range []error{rec.Validate(now), backendErrors(b, backends)} {
		switch {
		case errors.As(err, &ve):
			maps.Copy(fields, ve.Fields)
		case err != nil:
			return err
		}
	}
	if len(fields) > 0 {
		return &agent.ValidationError{Fields: fields}
	}
	return nil
}

// ValidateBackend checks b as saving it would, before anything calls it
// (the forms' Test backend button): its settings, and that its URL's host
// is one this node may call under backends, the node's policy for agent
// backends (no loopback or private address unless the operator allows
// it). It returns b trimmed as saving would store it, and a
// *agent.ValidationError keyed as saving's ("backend.url").
func ValidateBackend(b agent.Backend, backends runtime.Policy) (agent.Backend, error) {
	normalizeBackend(&b)
	return b, backendErrors(b, backends)
}

// KeepKey is b with old's API key when b is an llm or a2a backend without
// one, and an llm backend's tool servers their secrets: forms never
// render a key back, so a blank key means "keep the stored one" (saving
// an edit, and testing the edit form's backend). An
// a2a backend on the same card URL keeps its card's pinned signer too.
func KeepKey(b, old agent.Backend) agent.Backend {
	if b.APIKey == "" && (b.Kind == agent.BackendLLM || b.Kind == agent.BackendA2A && old.Kind == agent.BackendA2A) {
		b.APIKey = old.APIKey
	}
	if b.Kind == agent.BackendLLM {
		b.Tools = agent.KeepToolSecrets(b.Tools, old.Tools)
	}
	if b.Kind == agent.BackendA2A && old.Kind == agent.BackendA2A && b.URL == old.URL && b.CardSigner == "" {
		b.CardSigner = old.CardSigner
	}
	return b
}

// backendErrors are b's setting errors and, for a URL that is otherwise
// valid, the host rule's.
func backendErrors(b agent.Backend, backends runtime.Policy) error {
	err := b.Validate()
	var ve *agent.ValidationError
	if err != nil && !errors.As(err, &ve) {
		return err
	}
	if ve == nil {
		ve = &agent.ValidationError{Fields: map[string]string{}}
	}
	if _, bad := ve.Fields["backend.url"]; !bad && b.URL != "" {
		if err := backends.CheckURL(b.URL); err != nil {
			ve.Fields["backend.url"] = err.Error()
		}
	}
	for i, t := range b.Tools {
		// A tool server is called through the same guard as the backend.
		key := fmt.Sprintf("backend.tools[%d].url", i)
		if _, bad := ve.Fields[key]; !bad && t.URL != "" {
			if err := backends.CheckURL(t.URL); err != nil {
				ve.Fields[key] = err.Error()
			}
		}
	}
	if len(ve.Fields) == 0 {
		return nil
	}
	return ve
}
