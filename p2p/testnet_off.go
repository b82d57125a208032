//go:build !agentsite_testnet

package p2p

import "errors"

// errNoTestNet refuses TreatAsPublic in a normal build.
var errNoTestNet = errors.New("counting a prefix as public (--test-public-cidr) is for NAT tests only: " +
	"build agentsite with -tags agentsite_testnet to use it")

// TreatAsPublic is refused in a normal build: the test build's version
// (testnet.go) rewrites go-multiaddr's process-wide list of unroutable
// ranges, which a node serving the planet must never do. It changes
// nothing and returns an error that says how to build for tests.
func TreatAsPublic(prefixes []string) error {
	if len(prefixes) == 0 {
		return nil
	}
	return errNoTestNet
}
