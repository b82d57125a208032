package intake

import (
	"errors"

	"github.com/agentsite/agentsite/agent"
)

// Reason maps a verification error to a metrics label.
func Reason(err error) string {
	switch {
	case errors.Is(err, agent.ErrTooLarge):
		return "size"
	case errors.Is(err, agent.ErrKeyMismatch):
		return "key"
	case errors.Is(err, agent.ErrExpired):
		return "expired"
	case errors.Is(err, agent.ErrInvalidField):
		return "invalid"
	case errors.Is(err, agent.ErrBadEnvelope):
		return "signature"
	case errors.Is(err, ErrReplay):
		return "replay"
	case errors.Is(err, ErrWrongSender):
		return "sender"
	case errors.Is(err, agent.ErrOverQuota):
		return "quota"
	case errors.Is(err, ErrFlood):
		return "flood"
	case errors.Is(err, ErrBlockedPublisher):
		return "blocked"
	case errors.Is(err, ErrUntrusted):
		return "untrusted"
	}
	return "malformed"
}

var (
	ErrReplay      = errors.New("replayed record: seq lower than one already seen")
	ErrWrongSender = errors.New("record published by a peer other than its publisher")
)
