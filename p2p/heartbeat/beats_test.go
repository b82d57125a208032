package heartbeat

import (
	"testing"
	"time"
)

func TestBeatsOneRoundPerGap(t *testing.T) {
	b := newBeats()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	gap := 5 * time.Second
	want := func(v, w verdict, what string) {
		t.Helper()
		if v != w {
			t.Fatalf("%s: verdict %d, want %d", what, v, w)
		}
	}
	want(b.allow("p", t0, t0, gap), beatOK, "first heartbeat")
	for i := 1; i < maxHeartbeatParts; i++ {
		want(b.allow("p", t0, t0, gap), beatOK, "a part of the round")
	}
	want(b.allow("p", t0, t0, gap), beatLate, "a part past maxHeartbeatParts")
	for i := 0; i < floodAfter; i++ {
		want(b.allow("p", t0.Add(time.Second), t0.Add(time.Second), gap), beatLate, "a new round within the gap, once or twice")
	}
	want(b.allow("p", t0.Add(time.Second), t0.Add(time.Second), gap), beatFlood, "a new round within the gap, again")
	// The sender's clock spaces honest rounds: a round sent a whole gap
	// later is taken even if the mesh delivers it close to the last.
	want(b.allow("p", t0.Add(gap), t0.Add(gap/2), gap), beatOK, "the next round, delivered early")
	// A rogue writing later times into rounds sent at once is stopped by
	// the arrival gap.
	for i := 0; i < floodAfter; i++ {
		want(b.allow("p", t0.Add(2*gap), t0.Add(gap/2+time.Millisecond), gap), beatLate, "a round with a forged later time, at once")
	}
	want(b.allow("p", t0.Add(2*gap), t0.Add(gap/2+time.Millisecond), gap), beatFlood, "more rounds with forged later times")
	want(b.allow("p", t0.Add(time.Second), t0.Add(2*gap), gap), beatLate, "an older round after a newer one")
	want(b.allow("q", t0, t0, gap), beatOK, "another peer's heartbeat")
}
