//go:build !agentsite_testnet

package p2p

import (
	"errors"
	"time"

	"github.com/libp2p/go-libp2p"
)

// errNoLinkDelay refuses Config.LinkDelay in a normal build.
var errNoLinkDelay = errors.New("an emulated wide-area link (Config.LinkDelay) is for benchmarks and tests only: " +
	"build with -tags agentsite_testnet to use it")

// linkOptions is refused in a normal build: the test build's version
// (linkdelay.go) holds every byte of every connection, which a node
// serving the planet must never do.
func linkOptions(d time.Duration) ([]libp2p.Option, error) {
	if d <= 0 {
		return nil, nil
	}
	return nil, errNoLinkDelay
}
