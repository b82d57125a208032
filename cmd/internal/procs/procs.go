// Package procs runs the agentsite child processes the commands start: the
// three `agentsite serve` nodes of `agentsite demo` and the server under test
// of the load tool. It owns the one way to launch a binary with a scrubbed
// environment and a log, wait until it answers over HTTP, and stop it with a
// deadline, so every error about a child says which one and where its log is.
package procs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Spec says what to run and where its output goes.
type Spec struct {
	// Name is what messages call the process: "node-a", "agentsite".
	Name   string
	Binary string
	Args   []string
	// DropEnv lists prefixes of inherited environment variables the child
	// must not see, e.g. "AGENTSITE_": settings of the user's shell must not
	// leak into a demo planet or a measurement.
	DropEnv []string
	// Env is added to the inherited environment, as KEY=VALUE. Secrets go
	// here rather than in Args so that `ps` does not show them.
	Env []string
	// LogPath is the file the child's stdout and stderr are written to,
	// truncated first. Empty: they go to Output.
	LogPath string
	// Output receives the child's stdout and stderr when LogPath is empty;
	// nil discards them.
	Output io.Writer
}

// Process is a started child. Its methods are safe for concurrent use.
type Process struct {
	name    string
	logHint string // where to look when something goes wrong
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process has exited
	err     error         // what Wait returned; valid once exited is closed
}

// Start launches s. The child gets its own process group, so a Ctrl-C in
// the terminal reaches only the parent, which then stops its children in
// order; on Linux the kernel also kills it if the parent dies without
// cleaning up, so no orphan keeps a port.
func Start(s Spec) (*Process, error) {
	p := &Process{name: s.Name, logHint: "see its output above", exited: make(chan struct{})}
	out := s.Output
	var logFile *os.File
	if s.LogPath != "" {
		f, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: open its log: %w", s.Name, err)
		}
		logFile, out, p.logHint = f, f, "see "+s.LogPath
	}
	cmd := exec.Command(s.Binary, s.Args...)
	cmd.Env = append(environ(os.Environ(), s.DropEnv), s.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		if logFile != nil {
			_ = logFile.Close()
		}
		return nil, fmt.Errorf("%s: start %s (is the path right and the file executable?): %w", s.Name, s.Binary, err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		if logFile != nil {
			_ = logFile.Close()
		}
		close(p.exited)
	}()
	return p, nil
}

// environ is env without the variables whose names start with a dropped
// prefix.
func environ(env, drop []string) []string {
	var kept []string
next:
	for _, kv := range env {
		for _, prefix := range drop {
			if strings.HasPrefix(kv, prefix) {
				continue next
			}
		}
		kept = append(kept, kv)
	}
	return kept
}

// Name is what messages call the process.
func (p *Process) Name() string { return p.name }

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited, for whatever reason.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended, as exec.Cmd.Wait says: nil for exit status
// 0. Valid once Exited is closed.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// Unexpected is the error to report when the process ended while it was
// meant to be running.
func (p *Process) Unexpected() error {
	return fmt.Errorf("%s exited unexpectedly (%v); %s", p.name, p.Err(), p.logHint)
}

// Stop asks the process to stop (SIGTERM), waits up to grace for it to
// exit, then kills it (SIGKILL) and waits again. It returns nil when the
// process ended cleanly: exit status 0, or the signal it was asked to stop
// with. Killing it, or a failure exit, is an error naming its log. Stop may
// be called more than once and after the process has exited by itself.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return p.result()
	default:
	}
	// Signal fails where SIGTERM does not exist (Windows): kill at once.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
		return nil
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return p.result()
	case <-timer.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return fmt.Errorf("%s did not stop within %s of SIGTERM, so it was killed; %s", p.name, grace, p.logHint)
}

// result classifies how an exited process ended.
func (p *Process) result() error {
	if p.err == nil || isSignalExit(p.err) {
		return nil
	}
	return fmt.Errorf("%s: %v; %s", p.name, p.err, p.logHint)
}

// isSignalExit reports whether a child ended through a signal (the SIGTERM
// Stop sends, or a Ctrl-C that reached it) rather than with a failure.
func isSignalExit(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
