package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugMux serves net/http/pprof on its own mux (never the default one),
// for --debug-addr.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// startDebug listens on --debug-addr (loopback only, checked by Validate)
// and serves the profiles until Close.
func (m *Main) startDebug() error {
	if m.Config.DebugAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", m.Config.DebugAddr)
	if err != nil {
		return fmt.Errorf("listen on --debug-addr %s: %w", m.Config.DebugAddr, err)
	}
	m.debugListener = ln
	// No write timeout: a CPU profile or trace streams for its ?seconds=.
	srv := &http.Server{Handler: debugMux(), ReadHeaderTimeout: 10 * time.Second}
	m.debugServer = srv
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("debug server stopped", "err", err)
		}
	}()
	m.Logger.Info("pprof is served", "addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	return nil
}

// DebugURL is the pprof server's base URL, once Run has bound it.
func (m *Main) DebugURL() string {
	if m.debugListener == nil {
		return ""
	}
	return "http://" + m.debugListener.Addr().String()
}
