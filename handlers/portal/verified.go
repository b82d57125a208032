package portal

import "github.com/agentsite/agentsite/web"

// Verified is what the pages show of verified publishers: the domains
// each publisher proved (agent/verify, checked by this node itself; its
// own for its own peer id), and who has any.
type Verified interface {
	Domains(publisher string) []string
	Publishers() []string
}

// verifiedDomains is the domains publisher proved (nil without Verified).
func (p *Pages) verifiedDomains(publisher string) []string {
	if p.Verified == nil {
		return nil
	}
	return p.Verified.Domains(publisher)
}

// verifiedChoices are the publisher filter's options; "" is any.
var verifiedChoices = []web.Option{
	{Value: "", Label: "Any publisher"},
	{Value: "true", Label: "Verified publishers only"},
}
