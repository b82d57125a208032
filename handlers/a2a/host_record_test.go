package a2a_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/cardsig"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// The card of an agent hosted on another node is signed by this node
// (its url is this node's) and carries the host's own signed record in
// the host-record extension, which this node's signature covers: a client
// checks the host's claims against the host's peer id, and a card whose
// claims differ from the record, or whose record another node signed, is
// refused. A local agent's card carries none.
func TestRemoteCardCarriesTheHostRecord(t *testing.T) {
	e, _ := newEnv(t, nil)
	e.SignCards()
	remote := e.SeedRemote("far-bot", "Far Bot", "bob")
	other := e.SeedRemote("other-bot", "Other Bot", "carol")
	local := e.SeedEcho("near-bot", "Near Bot")
	get := func(id string, headers ...string) []byte {
		resp := e.Do(http.MethodGet, "/a2a/"+id+"/agent-card.json", nil, headers...)
		WantStatus(t, resp, http.StatusOK)
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	now := time.Now()
	for _, headers := range [][]string{{"A2A-Version", "1.0"}, nil} {
		body := get(remote.Record.ID, headers...)
		if signer, err := cardsig.Verify(body); err != nil || signer != e.Node.PeerID() {
			t.Fatalf("card signer %q, %v; want this node %s", signer, err, e.Node.PeerID())
		}
		rec, err := cardsig.VerifyHostRecord(body, now)
		if err != nil || rec.Publisher != remote.HostPeerID || rec.ID != remote.Record.ID {
			t.Fatalf("host record %+v, %v; want %s's record by %s", rec, err, remote.Record.ID, remote.HostPeerID)
		}
		// The claims changed after the host signed them: refused, and
		// this node's signature no longer matches either.
		forged := bytes.Replace(body, []byte(`"A remote far-bot"`), []byte(`"Sends your keys to me"`), 1)
		if _, err := cardsig.VerifyHostRecord(forged, now); !errors.Is(err, cardsig.ErrClaimMismatch) {
			t.Errorf("forged description: %v, want ErrClaimMismatch", err)
		}
		if _, err := cardsig.Verify(forged); !errors.Is(err, cardsig.ErrTampered) {
			t.Errorf("forged description, node signature: %v, want ErrTampered", err)
		}
	}
	// Another node's record under this host's name, and another agent's
	// record on this card.
	body := get(remote.Record.ID, "A2A-Version", "1.0")
	swapped := bytes.Replace(body, []byte(`"host":"`+remote.HostPeerID+`"`), []byte(`"host":"`+other.HostPeerID+`"`), 1)
	if _, err := cardsig.VerifyHostRecord(swapped, now); !errors.Is(err, cardsig.ErrHostMismatch) {
		t.Errorf("record under another host: %v, want ErrHostMismatch", err)
	}
	otherRecord := recordParam(t, get(other.Record.ID))
	borrowed := bytes.Replace(body, []byte(recordParam(t, body)), []byte(otherRecord), 1)
	if _, err := cardsig.VerifyHostRecord(borrowed, now); err == nil {
		t.Error("another agent's record on this card verified")
	}
	if _, err := cardsig.VerifyHostRecord(get(local), now); !errors.Is(err, cardsig.ErrNoHostRecord) {
		t.Errorf("local agent's card: %v, want ErrNoHostRecord", err)
	}
}

// recordParam is the host-record extension's record param of a card.
func recordParam(t *testing.T, card []byte) string {
	t.Helper()
	var c struct {
		Capabilities struct {
			Extensions []struct {
				URI    string            `json:"uri"`
				Params map[string]string `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(card, &c); err != nil {
		t.Fatal(err)
	}
	for _, x := range c.Capabilities.Extensions {
		if x.URI == cardsig.HostRecordURI && strings.TrimSpace(x.Params[cardsig.HostRecordParamRecord]) != "" {
			return x.Params[cardsig.HostRecordParamRecord]
		}
	}
	t.Fatalf("no host record in %s", card)
	return ""
}
