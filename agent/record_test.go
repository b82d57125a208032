package agent

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
)

// testNow is a fixed clock for tests: every record below is issued at it.
var testNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// newKey returns a fresh Ed25519 libp2p key.
func newKey(t testing.TB) crypto.PrivKey {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// seededKey returns a deterministic Ed25519 libp2p key (for reproducible
// fuzz seeds: Ed25519 signatures are deterministic too).
func seededKey(t testing.TB, b byte) crypto.PrivKey {
	t.Helper()
	k, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func peerIDOf(t testing.TB, k crypto.PrivKey) string {
	t.Helper()
	pid, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pid.String()
}

func deriveID(t testing.TB, pub crypto.PubKey, name string) string {
	t.Helper()
	id, err := DeriveID(pub, name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fullRecord returns a record that uses every field, hosted by key, issued
// at now. Publisher and ID are left empty (Seal fills them).
func fullRecord(t testing.TB, key crypto.PrivKey, now time.Time) *Record {
	t.Helper()
	return &Record{
		Name:        "weather-bot",
		DisplayName: "Weather Bot ☀",
		Description: "Answers questions about the weather.\n\tIndented second line.",
		Tags:        []string{"weather", "forecast-7d", "geo"},
		Skills: []Skill{
			{ID: "forecast", Name: "Forecast", Description: "Seven-day forecast", Examples: []string{"Will it rain in Paris tomorrow?", "Weekend in Oslo"}},
			{ID: "alerts", Name: "Severe weather alerts"},
		},
		Version: "1.2.3",
		Owner:   "alice",
		Endpoints: []Endpoint{
			{Kind: EndpointLibp2pMCP, PeerID: peerIDOf(t, key), Protocol: MCPProtocol},
			{Kind: EndpointHTTPMCP, URL: "https://weather.example.com/mcp"},
			{Kind: EndpointA2ACard, URL: "https://weather.example.com/.well-known/agent.json"},
		},
		Seq:       42,
		IssuedAt:  now,
		ExpiresAt: now.Add(DefaultTTL),
	}
}

// minimalRecord returns a record with only the required fields.
func minimalRecord(now time.Time) *Record {
	return &Record{
		Name:        "abc",
		DisplayName: "A",
		Seq:         1,
		IssuedAt:    now,
		ExpiresAt:   now.Add(DefaultTTL),
	}
}

// signedRecord returns a full record with Publisher and ID derived from key,
// i.e. one that Validate accepts.
func signedRecord(t testing.TB, key crypto.PrivKey, now time.Time) *Record {
	t.Helper()
	r := fullRecord(t, key, now)
	r.Publisher = peerIDOf(t, key)
	r.ID = deriveID(t, key.GetPublic(), r.Name)
	return r
}

// sealRaw signs r as is (no derivation, no validation) with key.
func sealRaw(t testing.TB, r record.Record, key crypto.PrivKey) []byte {
	t.Helper()
	env, err := record.Seal(r, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDeriveID(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	id := deriveID(t, k1.GetPublic(), "weather-bot")
	if again := deriveID(t, k1.GetPublic(), "weather-bot"); again != id {
		t.Fatalf("DeriveID not deterministic: %q then %q", id, again)
	}
	// Same key material through a marshal/unmarshal round trip.
	raw, err := crypto.MarshalPublicKey(k1.GetPublic())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := crypto.UnmarshalPublicKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	if again := deriveID(t, pub, "weather-bot"); again != id {
		t.Fatalf("DeriveID differs for the same key after unmarshal: %q vs %q", id, again)
	}
	if other := deriveID(t, k2.GetPublic(), "weather-bot"); other == id {
		t.Fatal("DeriveID is the same for two keys")
	}
	if other := deriveID(t, k1.GetPublic(), "weather-bot2"); other == id {
		t.Fatal("DeriveID is the same for two names")
	}
	if len(id) != IDLen {
		t.Fatalf("len(id) = %d, want %d", len(id), IDLen)
	}
	if !ValidID(id) {
		t.Fatalf("ValidID(%q) = false", id)
	}
	if id != strings.ToLower(id) {
		t.Fatalf("id %q is not lower case", id)
	}
}

func TestDeriveIDKnownAnswer(t *testing.T) {
	// Pins the id formula (it is part of the wire contract): a change here
	// changes every agent's id.
	k := seededKey(t, 1)
	got := deriveID(t, k.GetPublic(), "weather-bot")
	raw, _ := crypto.MarshalPublicKey(k.GetPublic())
	want := strings.ToLower(idEncoding.EncodeToString(sha256Sum(append(raw, "weather-bot"...))))
	if got != want {
		t.Fatalf("DeriveID = %q, want %q", got, want)
	}
}

func TestValidID(t *testing.T) {
	good := deriveID(t, newKey(t).GetPublic(), "abc")
	cases := map[string]struct {
		s    string
		want bool
	}{
		"derived":        {good, true},
		"all a":          {strings.Repeat("a", IDLen), true},
		"all 7":          {strings.Repeat("7", IDLen), true},
		"empty":          {"", false},
		"one short":      {good[:IDLen-1], false},
		"one long":       {good + "a", false},
		"upper case":     {strings.ToUpper(good), false},
		"digit 0":        {"0" + good[1:], false},
		"digit 1":        {"1" + good[1:], false},
		"digit 8":        {good[:IDLen-1] + "8", false},
		"digit 9":        {good[:IDLen-1] + "9", false},
		"padding":        {good[:IDLen-1] + "=", false},
		"hyphen":         {good[:10] + "-" + good[11:], false},
		"non-ascii":      {"é" + good[2:], false},
		"base64 char":    {good[:IDLen-1] + "+", false},
		"space":          {" " + good[1:], false},
		"path traversal": {"../" + good[3:], false},
	}
	for name, c := range cases {
		if got := ValidID(c.s); got != c.want {
			t.Errorf("%s: ValidID(%q) = %v, want %v", name, c.s, got, c.want)
		}
	}
}

func TestSealOpenRoundTrip(t *testing.T) {
	key := newKey(t)
	full := fullRecord(t, key, testNow)
	tomb := fullRecord(t, key, testNow)
	tomb.Tombstone = true
	tomb.Seq = 43
	for name, in := range map[string]*Record{"full": full, "tombstone": tomb, "minimal": minimalRecord(testNow)} {
		t.Run(name, func(t *testing.T) {
			want := *in // copy before Seal fills the derived fields
			data, err := Seal(in, key, testNow)
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			if len(data) > MaxRecordBytes {
				t.Fatalf("sealed %d bytes", len(data))
			}
			want.Publisher = peerIDOf(t, key)
			want.ID = deriveID(t, key.GetPublic(), want.Name)
			if in.Publisher != want.Publisher || in.ID != want.ID {
				t.Fatalf("Seal did not fill publisher/id: %q %q", in.Publisher, in.ID)
			}
			for _, open := range []func([]byte, time.Time) (*Record, error){Open, OpenIgnoringExpiry} {
				got, err := open(data, testNow.Add(time.Minute))
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if !got.IssuedAt.Equal(want.IssuedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
					t.Fatalf("times: got %v/%v, want %v/%v", got.IssuedAt, got.ExpiresAt, want.IssuedAt, want.ExpiresAt)
				}
				g, w := *got, want
				g.IssuedAt, g.ExpiresAt, w.IssuedAt, w.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("round trip:\n got %+v\nwant %+v", g, w)
				}
				pid, err := got.PublisherPeerID()
				if err != nil || pid.String() != want.Publisher {
					t.Fatalf("PublisherPeerID = %v, %v", pid, err)
				}
				if got.HostPeerID() != want.Publisher {
					t.Fatalf("HostPeerID = %q, want %q", got.HostPeerID(), want.Publisher)
				}
			}
		})
	}
}

func TestSealLocalTimeRoundTrip(t *testing.T) {
	// A record issued with a monotonic, non-UTC clock reading still opens and
	// keeps its instants.
	key := newKey(t)
	now := time.Now().In(time.FixedZone("X", 3*3600+1800))
	r := fullRecord(t, key, now)
	data, err := Seal(r, key, now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(data, now)
	if err != nil {
		t.Fatal(err)
	}
	if !got.IssuedAt.Equal(now) || !got.ExpiresAt.Equal(now.Add(DefaultTTL)) {
		t.Fatalf("times %v %v", got.IssuedAt, got.ExpiresAt)
	}
}

func TestSealRejectsInvalid(t *testing.T) {
	key := newKey(t)
	r := fullRecord(t, key, testNow)
	r.Name = "Bad Name"
	if _, err := Seal(r, key, testNow); !errors.Is(err, ErrInvalidField) {
		t.Fatalf("Seal(invalid) = %v, want ErrInvalidField", err)
	}
}

func TestSealIgnoresCallerPublisherAndID(t *testing.T) {
	key, other := newKey(t), newKey(t)
	r := fullRecord(t, key, testNow)
	r.Publisher = peerIDOf(t, other)
	r.ID = deriveID(t, other.GetPublic(), r.Name)
	data, err := Seal(r, key, testNow)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(data, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if got.Publisher != peerIDOf(t, key) || got.ID != deriveID(t, key.GetPublic(), r.Name) {
		t.Fatalf("Seal kept the caller's publisher/id: %q %q", got.Publisher, got.ID)
	}
}

func TestSealTooLarge(t *testing.T) {
	// Every field within its own limit, the whole over MaxRecordBytes.
	key := newKey(t)
	r := fullRecord(t, key, testNow)
	r.Skills = nil
	for i := 0; i < MaxSkills; i++ {
		s := Skill{ID: "skill-" + string(rune('a'+i)), Name: "Skill", Description: strings.Repeat("d", MaxSkillTextLen)}
		for j := 0; j < MaxSkillExamples; j++ {
			s.Examples = append(s.Examples, strings.Repeat("e", MaxSkillTextLen))
		}
		r.Skills = append(r.Skills, s)
	}
	_, err := Seal(r, key, testNow)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Fields["record"] == "" || !errors.Is(err, ErrInvalidField) {
		t.Fatalf("Seal(huge) = %v, want a ValidationError on \"record\"", err)
	}
}

func TestOpenRejects(t *testing.T) {
	key, other := newKey(t), newKey(t)
	valid, err := Seal(fullRecord(t, key, testNow), key, testNow)
	if err != nil {
		t.Fatal(err)
	}

	// A payload byte flipped: find the name inside the signed JSON.
	tampered := bytes.Clone(valid)
	i := bytes.Index(tampered, []byte(`"weather-bot"`))
	if i < 0 {
		t.Fatal("name not found in envelope")
	}
	tampered[i+1] = 'W'

	// Signed by other, claiming key's publisher and id.
	claim := signedRecord(t, key, testNow)
	keyMismatch := sealRaw(t, claim, other)

	// Signed by other with other's publisher, but the id of key.
	idMismatch := signedRecord(t, other, testNow)
	idMismatch.ID = deriveID(t, key.GetPublic(), idMismatch.Name)
	idOfKey := sealRaw(t, idMismatch, other)

	// Right signer and publisher, id derived from another name.
	wrongName := signedRecord(t, key, testNow)
	wrongName.ID = deriveID(t, key.GetPublic(), "another-name")
	idOfName := sealRaw(t, wrongName, key)

	// Signed correctly but a field is invalid.
	invalid := signedRecord(t, key, testNow)
	invalid.Seq = 0
	invalidField := sealRaw(t, invalid, key)

	// Same record under another payload type or signature domain.
	sr := signedRecord(t, key, testNow)
	otherType := sealRaw(t, otherCodecRecord{sr}, key)
	otherDomain := sealRaw(t, otherDomainRecord{sr}, key)
	// A libp2p peer record signed by the same key.
	peerRec := sealRaw(t, &peer.PeerRecord{PeerID: peer.ID(peerIDOf(t, key)), Seq: 1}, key)

	// Not JSON at all, properly signed.
	notJSON := rawPayload("not json")
	notJSONBytes := sealRaw(t, &notJSON, key)

	cases := []struct {
		name string
		data []byte
		now  time.Time
		want error
	}{
		{"tampered payload", tampered, testNow, ErrBadEnvelope},
		{"truncated", valid[:len(valid)-10], testNow, ErrBadEnvelope},
		{"signature byte flipped", flipLast(valid), testNow, ErrBadEnvelope},
		{"key mismatch", keyMismatch, testNow, ErrKeyMismatch},
		{"id of another key", idOfKey, testNow, ErrKeyMismatch},
		{"id of another name", idOfName, testNow, ErrKeyMismatch},
		{"invalid field", invalidField, testNow, ErrInvalidField},
		{"expired", valid, testNow.Add(DefaultTTL), ErrExpired},
		{"long expired", valid, testNow.Add(30 * 24 * time.Hour), ErrExpired},
		{"too large", make([]byte, MaxRecordBytes+1), testNow, ErrTooLarge},
		{"too large valid prefix", append(bytes.Clone(valid), make([]byte, MaxRecordBytes)...), testNow, ErrTooLarge},
		{"garbage", []byte("this is not a libp2p envelope at all"), testNow, ErrBadEnvelope},
		{"random", randomBytes(t, 512), testNow, ErrBadEnvelope},
		{"empty", nil, testNow, ErrBadEnvelope},
		{"payload not json", notJSONBytes, testNow, ErrBadEnvelope},
		{"other payload type", otherType, testNow, ErrBadEnvelope},
		{"other domain", otherDomain, testNow, ErrBadEnvelope},
		{"peer record", peerRec, testNow, ErrBadEnvelope},
	}
	sentinels := []error{ErrTooLarge, ErrBadEnvelope, ErrKeyMismatch, ErrExpired, ErrInvalidField}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Open(c.data, c.now)
			if !errors.Is(err, c.want) {
				t.Fatalf("Open = %v, want %v", err, c.want)
			}
			if r != nil {
				t.Fatalf("Open returned a record with error %v", err)
			}
			for _, s := range sentinels {
				if s != c.want && errors.Is(err, s) {
					t.Fatalf("error %v also matches %v", err, s)
				}
			}
			r, err = OpenIgnoringExpiry(c.data, c.now)
			if c.want == ErrExpired {
				if err != nil || r == nil {
					t.Fatalf("OpenIgnoringExpiry(expired) = %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) || r != nil {
				t.Fatalf("OpenIgnoringExpiry = %v, want %v", err, c.want)
			}
		})
	}
}

func TestOpenExpiryBoundary(t *testing.T) {
	key := newKey(t)
	data, err := Seal(fullRecord(t, key, testNow), key, testNow)
	if err != nil {
		t.Fatal(err)
	}
	exp := testNow.Add(DefaultTTL)
	if _, err := Open(data, exp.Add(-time.Nanosecond)); err != nil {
		t.Fatalf("Open just before expiry: %v", err)
	}
	if _, err := Open(data, exp); !errors.Is(err, ErrExpired) {
		t.Fatalf("Open at expires_at = %v, want ErrExpired", err)
	}
	// A record from the future (beyond the clock skew) is invalid, not expired.
	if _, err := OpenIgnoringExpiry(data, testNow.Add(-ClockSkew-time.Second)); !errors.Is(err, ErrInvalidField) {
		t.Fatalf("Open before issued_at-skew = %v, want ErrInvalidField", err)
	}
}

func TestHostPeerID(t *testing.T) {
	r := &Record{Publisher: "pub"}
	if r.HostPeerID() != "pub" {
		t.Fatal("no endpoints: want publisher")
	}
	r.Endpoints = []Endpoint{{Kind: EndpointHTTPMCP, URL: "https://x"}, {Kind: EndpointLibp2pMCP}, {Kind: EndpointLibp2pMCP, PeerID: "host"}}
	if r.HostPeerID() != "host" {
		t.Fatalf("HostPeerID = %q, want host", r.HostPeerID())
	}
}

func TestUnmarshalRecordKeepsTargetOnError(t *testing.T) {
	r := Record{Name: "keep"}
	if err := r.UnmarshalRecord([]byte(`{"name": 5}`)); err == nil {
		t.Fatal("want error")
	}
	if r.Name != "keep" {
		t.Fatalf("UnmarshalRecord clobbered the target on error: %+v", r)
	}
}

// otherCodecRecord is a Record sealed under another payload type.
type otherCodecRecord struct{ *Record }

func (otherCodecRecord) Codec() []byte { return []byte("/agentsite/other/1") }

// otherDomainRecord is a Record sealed under another signature domain.
type otherDomainRecord struct{ *Record }

func (otherDomainRecord) Domain() string { return "agentsite-other" }

func flipLast(b []byte) []byte {
	c := bytes.Clone(b)
	c[len(c)-1] ^= 0x01
	return c
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func sha256Sum(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

// rawPayload is an arbitrary payload sealed as an agent record (same domain
// and payload type).
type rawPayload []byte

func (rawPayload) Domain() string                   { return PayloadDomain }
func (rawPayload) Codec() []byte                    { return PayloadCodec }
func (p rawPayload) MarshalRecord() ([]byte, error) { return p, nil }
func (p *rawPayload) UnmarshalRecord(b []byte) error {
	*p = bytes.Clone(b)
	return nil
}

// TestSealOpenedIsOpen: SealOpened returns the envelope Seal makes and
// the very record Open decodes from it; an invalid record is refused.
func TestSealOpenedIsOpen(t *testing.T) {
	key := newKey(t)
	for name, in := range map[string]*Record{"full": fullRecord(t, key, testNow), "minimal": minimalRecord(testNow)} {
		t.Run(name, func(t *testing.T) {
			data, got, err := SealOpened(in, key, testNow)
			if err != nil {
				t.Fatalf("SealOpened: %v", err)
			}
			want, err := Open(data, testNow)
			if err != nil {
				t.Fatalf("Open of SealOpened's envelope: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("SealOpened record:\n got %+v\nwant %+v", got, want)
			}
		})
	}
	bad := fullRecord(t, key, testNow)
	bad.Name = "Bad Name"
	if _, _, err := SealOpened(bad, key, testNow); !errors.Is(err, ErrInvalidField) {
		t.Fatalf("SealOpened(invalid) = %v, want ErrInvalidField", err)
	}
	expired := fullRecord(t, key, testNow)
	if _, _, err := SealOpened(expired, key, expired.ExpiresAt); err == nil {
		t.Fatal("SealOpened of an expired record succeeded")
	}
}
