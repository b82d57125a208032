package handlers

// PeerTurnLimit is the budget of turns each other node may send this one
// (p2p/peermcp's HandlerConfig.Allow, keyed by the calling peer). A portal
// forwards many people's turns, so a peer's budget is 100 people's chat
// rate: a safety valve against one misbehaving node, not a quota.
func (s *Server) PeerTurnLimit() func(caller string) bool {
	l := newKeyedLimiter(100 * s.Config.ChatRateLimit)
	return func(caller string) bool { return l.allow(caller, s.now()) }
}
