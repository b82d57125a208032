package procs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Readiness polling: often enough that a start is noticed within a tenth
// of a second, each probe bounded so a hung listener cannot stall the wait.
const (
	pollEvery    = 100 * time.Millisecond
	probeTimeout = 2 * time.Second
)

// WaitReady polls url with GET until it answers 200, the process exits,
// ctx ends or timeout passes; the error says which, with the last answer.
func (p *Process) WaitReady(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: probeTimeout}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	last := "no answer yet"
	if _, err := http.NewRequest(http.MethodGet, url, nil); err != nil {
		return fmt.Errorf("%s: readiness URL: %w", p.name, err)
	}
	for {
		switch status, err := probe(ctx, client, url); {
		case err != nil:
			last = err.Error()
		case status == http.StatusOK:
			return nil
		default:
			last = fmt.Sprintf("%d %s", status, http.StatusText(status))
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v); %s", p.name, p.err, p.logHint)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s not ready after %s (last GET %s: %s); %s", p.name, timeout, url, last, p.logHint)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// probe is one GET of url; it returns the status.
func probe(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}
