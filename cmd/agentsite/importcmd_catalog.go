package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent/bulk"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/verify"
)

// docTimeout bounds one fetch of a catalog or server card.
const docTimeout = 15 * time.Second

// importItems opens what an import reads: FILE ("-": standard input, an
// http(s) URL for --format ai-catalog), or the domains of --crawl. closeIn
// releases it.
func importItems(ctx context.Context, c importConfig, stdin io.Reader, progress io.Writer, opts bulk.Options) (iter.Seq[registry.BatchItem], func(), error) {
	nothing := func() {}
	if c.Crawl != "" {
		domains, err := readDomains(c.Crawl, c.CrawlMax)
		if err != nil {
			return nil, nothing, err
		}
		ctx, cancel := context.WithTimeout(ctx, c.CrawlTimeout)
		return crawlItems(ctx, domains, opts, progress), cancel, nil
	}
	if c.Format == bulk.FormatAICatalog && (strings.HasPrefix(c.File, "https://") || strings.HasPrefix(c.File, "http://")) {
		raw, err := opts.FetchDoc(ctx, c.File, bulk.MaxCatalogBytes)
		if err != nil {
			return nil, nothing, fmt.Errorf("fetch the catalog %s: %w", c.File, err)
		}
		items, err := bulk.Items(ctx, strings.NewReader(string(raw)), opts)
		return items, nothing, err
	}
	in, closeIn := stdin, nothing
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			// os.Open's error already says "open FILE: why".
			return nil, nothing, fmt.Errorf("the file to import: %w", err)
		}
		in, closeIn = f, func() { f.Close() }
	}
	items, err := bulk.Items(ctx, in, opts)
	if err != nil {
		closeIn()
		return nil, nothing, err
	}
	return items, closeIn, nil
}

// docFetcher GETs JSON documents through the guarded client, refusing
// more than max bytes.
func docFetcher(client *http.Client) bulk.DocFetcher {
	return func(ctx context.Context, url string, max int64) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/ai-catalog+json, application/mcp-server-card+json, application/json")
		req.Header.Set("User-Agent", "AgentSite/"+buildVersion())
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("the server answered %s", resp.Status)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
		if err != nil {
			return nil, err
		}
		if int64(len(body)) > max {
			return nil, fmt.Errorf("the document is larger than %d bytes", max)
		}
		return body, nil
	}
}

// readDomains reads a --crawl file: one domain a line (# comments and
// blank lines skipped), each checked, at most max.
func readDomains(path string, max int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		// os.Open's error already says "open FILE: why".
		return nil, fmt.Errorf("--crawl: %w", err)
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		d, err := verify.NormalizeDomain(line)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		if len(out) == max {
			return nil, fmt.Errorf("%s lists more than %d domains (--crawl-max)", path, max)
		}
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s lists no domains", path)
	}
	return out, nil
}

// crawlItems imports each domain's well-known catalog in turn, saying on
// progress how far it got; a domain that cannot be read is one refused
// item saying why, and the crawl goes on. Items are numbered across the
// whole crawl.
func crawlItems(ctx context.Context, domains []string, opts bulk.Options, progress io.Writer) iter.Seq[registry.BatchItem] {
	return func(yield func(registry.BatchItem) bool) {
		n := 0
		for i, d := range domains {
			if ctx.Err() != nil {
				yield(registry.BatchItem{Index: n, Err: fmt.Errorf("the crawl stopped at %s (%d of %d domains): %w", d, i, len(domains), ctx.Err())})
				return
			}
			url := "https://" + d + "/.well-known/ai-catalog.json"
			fmt.Fprintf(progress, "crawl %d/%d: %s\n", i+1, len(domains), url)
			raw, err := opts.FetchDoc(ctx, url, bulk.MaxCatalogBytes)
			if err != nil {
				if !yield(registry.BatchItem{Index: n, Err: fmt.Errorf("%s: %w", url, err)}) {
					return
				}
				n++
				continue
			}
			items, err := bulk.Items(ctx, strings.NewReader(string(raw)), opts)
			if err != nil {
				return
			}
			for it := range items {
				it.Index = n
				if it.Err != nil {
					it.Err = fmt.Errorf("%s: %w", d, it.Err)
				}
				if !yield(it) {
					return
				}
				n++
			}
		}
	}
}
