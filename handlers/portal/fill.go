package portal

// Fill is how this node's catalogue fills from the network: what the
// hosts it hears say they host (the signed agents_hosted of their
// heartbeats) and whether a catalogue-sync fill runs. cmd/agentsite
// answers from the Sink's memory of heartbeats and from p2p's sync.
type Fill interface {
	// HostClaims are the claims of the peers of ids heard (absent: not
	// heard since the node started).
	HostClaims(ids []string) map[string]int
	// Announced sums the claims of the hosts heard online, this node's
	// own excepted.
	Announced() (hosts, listings int)
	// Filling tells whether a fill runs: catalogue-sync shards being
	// read from a peer for the first time.
	Filling() bool
}

// syncing is the home page's "syncing: N of M" while a fill runs: the
// listings held of other hosts (visible ones, this node's own left out,
// at most M) of M the hosts heard announce. ok is false when no fill
// runs or nothing is announced.
func (p *Pages) syncing(visible, local int) (held, announced int, ok bool) {
	if p.Fill == nil || !p.Fill.Filling() {
		return 0, 0, false
	}
	_, announced = p.Fill.Announced()
	if announced <= 0 {
		return 0, 0, false
	}
	return min(max(visible-local, 0), announced), announced, true
}
