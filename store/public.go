package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentsite/agentsite/agent"
)

// PublicRecordJSON is the JSON object of r's public fields as the API sends
// them (apiwire.Agent starts with the same fields, in the same order):
// absent lists as [], HTML escaped as encoding/json does by default.
// Engines store it with the record (Listing.PublicJSON), so a page of
// results is written out without decoding the record's JSON columns and
// encoding them again.
func PublicRecordJSON(r *agent.Record) ([]byte, error) {
	c := *r
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if c.Skills == nil {
		c.Skills = []agent.Skill{}
	}
	if c.Endpoints == nil {
		c.Endpoints = []agent.Endpoint{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("encode public JSON of agent %s: %w", r.ID, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// SetPublicJSON sets l.PublicJSON to stored, the engine's copy, or for a
// row written before engines kept one (migration 0004), makes it from the
// record.
func (l *Listing) SetPublicJSON(stored []byte) error {
	if l.PublicJSON = stored; stored != nil {
		return nil
	}
	var err error
	l.PublicJSON, err = PublicRecordJSON(&l.Record)
	return err
}
