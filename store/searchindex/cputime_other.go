//go:build !unix

package searchindex

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
