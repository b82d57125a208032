package registry

import (
	"errors"
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
	in.Backend.Kind = strings.TrimSpace(in.Backend.Kind)
	in.Backend.URL = strings.TrimSpace(in.Backend.URL)
}

// validate merges record and backend errors into one ValidationError so a
// form shows every problem at once.
func validate(rec *agent.Record, b agent.Backend, now time.Time, allowPrivate bool) error {
	fields := map[string]string{}
	var ve *agent.ValidationError
	for _, err := range []error{rec.Validate(now), b.Validate()} {
		switch {
		case errors.As(err, &ve):
			for k, v := range ve.Fields {
				fields[k] = v
			}
		case err != nil:
			return err
		}
	}
	if _, bad := fields["backend.url"]; !bad && b.URL != "" {
		if err := runtime.CheckHost(b.URL, allowPrivate); err != nil {
			fields["backend.url"] = err.Error()
		}
	}
	if len(fields) > 0 {
		return &agent.ValidationError{Fields: fields}
	}
	return nil
}
