package agent

import (
	"strings"
	"testing"
)

// An imported record's origin is bounded and must name its registry and
// its upstream name; it survives sealing (it travels in the envelope).
func TestOrigin(t *testing.T) {
	key := newKey(t)
	r := signedRecord(t, key, testNow)
	r.Origin = &Origin{Registry: OriginMCPRegistry, Name: "io.github.user/weather", Version: "1.0.2"}
	if err := r.Validate(testNow); err != nil {
		t.Fatalf("valid origin: %v", err)
	}
	env, err := Seal(r, key, testNow)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(env, testNow)
	if err != nil || got.Origin == nil || *got.Origin != *r.Origin {
		t.Fatalf("opened origin = %+v, %v", got.Origin, err)
	}
	for _, bad := range []*Origin{
		{Registry: "", Name: "a/b"},
		{Registry: OriginMCPRegistry, Name: ""},
		{Registry: OriginMCPRegistry, Name: strings.Repeat("n", MaxOriginNameLen+1)},
		{Registry: OriginMCPRegistry, Name: "a/b", Version: strings.Repeat("1", MaxOriginVersionLen+1)},
		{Registry: OriginMCPRegistry, Name: "a/b\nc"},
	} {
		r.Origin = bad
		if err := r.Validate(testNow); err == nil {
			t.Errorf("origin %+v accepted", bad)
		}
	}
}
