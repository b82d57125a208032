package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/cardsig"
	"github.com/agentsite/agentsite/agent/registry"
)

// WellKnownCardPath is where an A2A server serves its agent card.
const WellKnownCardPath = "/.well-known/agent-card.json"

// cardJSON is the part of an A2A agent card this import reads, in A2A
// 1.0's shape (supportedInterfaces) or 0.3's (url), plus cardUrl: where
// the card is served, when not at the well-known path of the card's
// interface URL.
type cardJSON struct {
	Name                string `json:"name"`
	Description         string `json:"description"`
	Version             string `json:"version"`
	URL                 string `json:"url"`
	SupportedInterfaces []struct {
		URL string `json:"url"`
	} `json:"supportedInterfaces"`
	CardURL string `json:"cardUrl"`
	Skills  []struct {
		ID          string   `json:"id"`
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Examples    []string `json:"examples"`
	} `json:"skills"`
}

// decodeCardItem reads one line of an a2a-cards file: a card URL (bare or
// as a JSON string), which fetch resolves (and whose signature the
// runtime verifies), or a card's JSON, whose signature is verified here.
func decodeCardItem(ctx context.Context, raw []byte, fetch CardFetcher) (registry.Input, error) {
	if raw[0] != '{' {
		u := string(raw)
		if raw[0] == '"' {
			if err := json.Unmarshal(raw, &u); err != nil {
				return registry.Input{}, fmt.Errorf("not a card URL or card: %w", err)
			}
		}
		if fetch == nil {
			return registry.Input{}, errors.New("card URLs cannot be fetched here: give the card's JSON")
		}
		c, err := fetch(ctx, u)
		if err != nil {
			return registry.Input{}, fmt.Errorf("fetch card %s: %w", u, err)
		}
		return FromCard(c, u), nil
	}
	var c cardJSON
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&c); err != nil {
		return registry.Input{}, fmt.Errorf("not an A2A agent card: %w", err)
	}
	signer, err := verifyCard(raw, c.CardURL != "")
	if err != nil {
		return registry.Input{}, err
	}
	cardURL := c.CardURL
	if cardURL == "" {
		iface := c.URL
		if len(c.SupportedInterfaces) > 0 && c.SupportedInterfaces[0].URL != "" {
			iface = c.SupportedInterfaces[0].URL
		}
		u, err := url.Parse(iface)
		if err != nil || u.Host == "" {
			return registry.Input{}, errors.New(`the card has no "supportedInterfaces" (A2A 1.0) or "url" (0.3) to find it by; add "cardUrl": where the card is served`)
		}
		cardURL = u.Scheme + "://" + u.Host + WellKnownCardPath
	}
	card := Card{Name: c.Name, Description: c.Description, Version: c.Version, Signer: signer}
	for _, s := range c.Skills {
		card.Skills = append(card.Skills, agent.Skill{ID: s.ID, Name: s.Name, Description: s.Description, Examples: s.Examples})
	}
	return FromCard(card, cardURL), nil
}

// verifyCard checks a card's signatures (agent/cardsig) and returns the
// signer's peer id, "" for an unsigned card. cardUrl, this file's own
// member, is not part of what was signed: it is left out first.
func verifyCard(raw []byte, hasCardURL bool) (string, error) {
	if hasCardURL {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", fmt.Errorf("not an A2A agent card: %w", err)
		}
		delete(m, "cardUrl")
		b, err := json.Marshal(m)
		if err != nil {
			return "", err
		}
		raw = b
	}
	if _, err := cardsig.VerifyHostRecord(raw, time.Now()); err != nil && !errors.Is(err, cardsig.ErrNoHostRecord) {
		return "", fmt.Errorf("the card's host record is refused (%w); import the card as a node serves it", err)
	}
	signer, err := cardsig.Verify(raw)
	switch {
	case errors.Is(err, cardsig.ErrUnsigned):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("the card's signature is refused (%w); import the card as its host serves it, or without its signatures", err)
	}
	return signer, nil
}

// FromCard is the registration of an external A2A agent: an a2a-backend
// agent on its card URL, named after the card, its skills the card's, the
// card's signer pinned (the runtime refuses the card if another key signs
// it later).
func FromCard(c Card, cardURL string) registry.Input {
	skills := c.Skills
	if len(skills) > agent.MaxSkills {
		skills = skills[:agent.MaxSkills]
	}
	for i := range skills {
		s := &skills[i]
		s.ID = Slug(s.ID)
		s.Name = cut(s.Name, agent.MaxSkillTextLen)
		s.Description = cut(s.Description, agent.MaxSkillTextLen)
		if len(s.Examples) > agent.MaxSkillExamples {
			s.Examples = s.Examples[:agent.MaxSkillExamples]
		}
		for j := range s.Examples {
			s.Examples[j] = cut(s.Examples[j], agent.MaxSkillTextLen)
		}
	}
	return registry.Input{
		Name:        Slug(c.Name),
		DisplayName: cut(strings.TrimSpace(c.Name), agent.MaxDisplayNameLen),
		Description: cut(c.Description, agent.MaxDescriptionBytes),
		Tags:        []string{"a2a"},
		Skills:      skills,
		Version:     version(c.Version),
		Backend:     agent.Backend{Kind: agent.BackendA2A, URL: cardURL, CardSigner: c.Signer},
	}
}
