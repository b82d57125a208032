package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentsite/agentsite/handlers/apiwire"
)

// The demo talks to its nodes through their public API only, as any
// script would, with the API's own types (apiwire).

// getJSON decodes the 200 answer of a GET into v.
func (d *demo) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v)
}

// listAgents pages through every listing a node's API shows.
func (d *demo) listAgents(ctx context.Context, n *demoNode) ([]apiwire.Agent, error) {
	var all []apiwire.Agent
	cursor := ""
	for range 1000 {
		var page apiwire.AgentList
		u := n.baseURL() + "/api/v1/agents?status=all&limit=100&cursor=" + url.QueryEscape(cursor)
		if err := d.getJSON(ctx, u, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Agents...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	return all, nil
}

// ensureAgent registers spec on node n through its API, or, when a
// previous demo run left it there, publishes it afresh with PUT (its
// backend may have changed). verb says which it did; id is the agent's.
func (d *demo) ensureAgent(ctx context.Context, token string, n *demoNode, spec demoAgentSpec) (verb, id string, err error) {
	listings, err := d.listAgents(ctx, n)
	if err != nil {
		return "", "", err
	}
	verb, method, path, want := "registered", http.MethodPost, "/api/v1/agents", http.StatusCreated
	for _, l := range listings {
		if l.Local && l.Name == spec.Name {
			verb, method, path, want = "re-published", http.MethodPut, "/api/v1/agents/"+l.ID, http.StatusOK
		}
	}
	b, err := json.Marshal(spec.input())
	if err != nil {
		return "", "", err
	}
	req, err := http.NewRequestWithContext(ctx, method, n.baseURL()+path, bytes.NewReader(b))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != want {
		return "", "", fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(out))
	}
	var got apiwire.Agent
	if err := json.Unmarshal(out, &got); err != nil || got.ID == "" {
		return "", "", fmt.Errorf("%s %s: unreadable answer %q", method, path, out)
	}
	return verb, got.ID, nil
}

// waitMirrored waits until every node's API lists every node's extra agent:
// the catalogue has travelled the network. A timeout is a warning, not a
// failure: the nodes are up and may still converge.
func (d *demo) waitMirrored(ctx context.Context) error {
	d.progress("waiting for every portal to list all three agents …")
	began := time.Now()
	deadline := time.NewTimer(d.cfg.SyncTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(demoPollEvery)
	defer tick.Stop()
	for {
		missing := d.missingListings(ctx)
		if len(missing) == 0 {
			d.progress("every portal lists all three agents (%.1fs)", time.Since(began).Seconds())
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			d.warn("after %s still missing: %s; the nodes keep syncing (see the logs)", d.cfg.SyncTimeout, strings.Join(missing, "; "))
			return nil
		case <-tick.C:
		}
	}
}

// missingListings says which node lacks which extra agent.
func (d *demo) missingListings(ctx context.Context) []string {
	var missing []string
	for _, n := range d.nodes {
		listings, err := d.listAgents(ctx, n)
		if err != nil {
			missing = append(missing, n.name+": "+err.Error())
			continue
		}
		have := map[string]bool{}
		for _, l := range listings {
			have[l.ID] = true
		}
		var lacks []string
		for _, o := range d.nodes {
			if !have[o.agentID] {
				lacks = append(lacks, o.spec.Name)
			}
		}
		if len(lacks) > 0 {
			missing = append(missing, n.name+" lacks "+strings.Join(lacks, ", "))
		}
	}
	return missing
}
