package api

import (
	"net/http"
	"strconv"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/verify"
)

// Verified is what the API shows of verified publishers (agent/verify:
// the domains each publisher proved, checked by this node itself).
type Verified interface {
	Domains(publisher string) []string
	Publishers() []string
	Generation() uint64
	OwnStatuses() []verify.Status
}

// verifiedFilter reads ?verified=true (only agents of verified
// publishers); false or absent: any.
func (a *API) verifiedFilter(r *http.Request) (bool, error) {
	s := r.URL.Query().Get("verified")
	if s == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, &agent.ValidationError{Fields: map[string]string{"verified": "must be true or false"}}
	}
	return v, nil
}

// verifiedPublishers is the peers with a proved domain (none without
// Verified).
func (a *API) verifiedPublishers() []string {
	if a.Verified == nil {
		return nil
	}
	return a.Verified.Publishers()
}

// verifiedDomains is the domains publisher proved (nil without Verified).
func (a *API) verifiedDomains(publisher string) []string {
	if a.Verified == nil {
		return nil
	}
	return a.Verified.Domains(publisher)
}

// verifiedGeneration keys cached list answers by the verified sets they
// were built with ("" without Verified).
func (a *API) verifiedGeneration() string {
	if a.Verified == nil {
		return ""
	}
	return "v" + strconv.FormatUint(a.Verified.Generation(), 10) + "\x00"
}

// ownDomains is this node's claimed domains and their proofs, for GET
// /api/v1/node ([] when it claims none).
func (a *API) ownDomains() []verify.Status {
	if a.Verified == nil {
		return []verify.Status{}
	}
	if s := a.Verified.OwnStatuses(); s != nil {
		return s
	}
	return []verify.Status{}
}
