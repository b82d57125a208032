package handlertest

import (
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/agentsite/agentsite/agent/registry"
)

// UseHealth gives e's portal agent health as Main wires it: a tracker
// (also hearing local chat turns) and a prober whose probes go through the
// real agent runtime (UseRuntime), for the owners' pages and the forms'
// Test backend button. The prober is returned for tests that probe
// agents themselves; it runs no loop.
func UseHealth(e *Env) (*registry.Health, *registry.Prober) {
	e.T.Helper()
	UseRuntime(e)
	rt, ok := e.Server.Chat.Local.(registry.Probes)
	if !ok {
		e.T.Fatalf("the runtime %T cannot probe", e.Server.Chat.Local)
	}
	h := registry.NewHealth(registry.HealthOptions{})
	p := &registry.Prober{Store: e.Store, Runtime: rt, Health: h}
	e.Server.Chat.Outcomes = h
	// The portal is given health when it is built, as Main builds it: the
	// server is built again, on the same use cases and HTTP server.
	e.deps.Health, e.deps.Tester = h, p
	e.build()
	return h, p
}

// AllowPrivateEndpoints lets e's agents have backends on loopback and
// private addresses, where the tests' fakes listen.
func (e *Env) AllowPrivateEndpoints() {
	e.Server.Registry.AllowPrivate = true
}

// RefusingURL is an http URL on 127.0.0.1 whose port refuses connections
// (a listener opened and closed), and its host:port.
func RefusingURL(t testing.TB, path string) (u, hostPort string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hostPort = ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + hostPort + path, hostPort
}

// PostFormWith is PostForm with extra headers in name, value pairs (e.g.
// "HX-Request", "true" for what htmx sends).
func (e *Env) PostFormWith(path string, vals url.Values, headers ...string) *http.Response {
	e.T.Helper()
	h := append([]string{"Content-Type", "application/x-www-form-urlencoded", "Origin", e.TS.URL, "Sec-Fetch-Site", "same-origin"}, headers...)
	return e.Do(http.MethodPost, path, vals.Encode(), h...)
}
