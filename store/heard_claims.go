package store

// HostClaims are, for the peers of ids this node hears, how many listings
// each says it hosts: the signed agents_hosted of its last heartbeat, as
// the Sink remembers it. A peer not heard since the process started (or
// forgotten, maxHeard) is absent. The nodes table keeps the claim capped
// at what this node holds, so these are what "holding N of M" compares
// that count with.
func (s *Sink) HostClaims(ids []string) map[string]int {
	s.heard.mu.Lock()
	defer s.heard.mu.Unlock()
	out := make(map[string]int, len(ids))
	for _, id := range ids {
		if e := s.heard.m[id]; e != nil {
			out[id] = e.claim
		}
	}
	return out
}

// Announced sums, over the nodes heard online but this one, the listings
// they say they host (their claims): what a full mirror would hold of
// them. One pass over the Sink's memory of heard nodes (at most maxHeard).
func (s *Sink) Announced() (hosts, listings int) {
	s.heard.mu.Lock()
	defer s.heard.mu.Unlock()
	for id, e := range s.heard.m {
		if id == s.SelfID || !e.online {
			continue
		}
		hosts++
		listings += e.claim
	}
	return hosts, listings
}
