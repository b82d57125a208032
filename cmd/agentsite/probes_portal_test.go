package main

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// TestPortalHealthWired: a node's portal has its health tracker and
// prober: the register form's Test backend button probes, saving probes
// the new agent once, and the owner's account page shows why it failed.
func TestPortalHealthWired(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	m := startNode(t, t.TempDir(), "--demo-agents=false", "--allow-private-endpoints")
	defer m.Close()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path string, vals url.Values, want int) string {
		t.Helper()
		var resp *http.Response
		var err error
		if method == http.MethodGet {
			resp, err = c.Get(m.HTTPURL() + path)
		} else {
			// A browser's form: it says whence (Origin).
			req, rerr := http.NewRequestWithContext(t.Context(), method, m.HTTPURL()+path, strings.NewReader(vals.Encode()))
			if rerr != nil {
				t.Fatal(rerr)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", m.HTTPURL())
			resp, err = c.Do(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %.500s", method, path, resp.StatusCode, want, body)
		}
		return string(body)
	}
	send(http.MethodPost, "/signup", url.Values{"handle": {"bob"}, "password": {"password-bob"}, "password_confirm": {"password-bob"}}, http.StatusSeeOther)
	form := url.Values{"name": {"hook"}, "display_name": {"Hook"}, "description": {"Down."},
		"backend_kind": {"webhook"}, "backend_url": {"http://" + deadAddr + "/hook"}}
	form.Set("test_backend", "1")
	if body := send(http.MethodPost, "/register", form, http.StatusOK); !strings.Contains(body, "connection refused at "+deadAddr) {
		t.Errorf("Test backend: the page does not say connection refused at %s", deadAddr)
	}
	form.Del("test_backend")
	send(http.MethodPost, "/register", form, http.StatusSeeOther)
	if body := send(http.MethodGet, "/account", nil, http.StatusOK); !strings.Contains(body, "connection refused at "+deadAddr) {
		t.Errorf("/account does not show the saved agent's probe error")
	}
}
