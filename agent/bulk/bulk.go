// Package bulk reads the files of a bulk import (agentsite import, POST
// /api/v1/agents:batch) into registrations, one item at a time, so a file
// of any size is streamed: JSON lines of registration bodies, an MCP
// Registry /v0.1/servers response, and A2A agent cards. It registers
// nothing itself: agent/registry's Batch does, item by item, as a form
// would.
package bulk

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
)

// Formats.
const (
	FormatJSONL       = "jsonl"
	FormatMCPRegistry = "mcp-registry"
	FormatA2ACards    = "a2a-cards"
)

// Formats is every format, for usage texts.
var Formats = []string{FormatJSONL, FormatMCPRegistry, FormatA2ACards, FormatAICatalog}

// MaxItemBytes bounds one item (a line, a server, a card).
const MaxItemBytes = 256 << 10

// Card is what an A2A card item needs from an agent card.
type Card struct {
	Name        string
	Description string
	Version     string
	Skills      []agent.Skill
	// Signer is the peer id of the node that signed the card (verified,
	// agent/cardsig); "" for an unsigned card.
	Signer string
}

// CardFetcher fetches the A2A agent card at url (through the node's guarded
// client, with its timeouts and SSRF rule).
type CardFetcher func(ctx context.Context, url string) (Card, error)

// Options of a Reader.
type Options struct {
	// Format is one of Formats; "" is jsonl.
	Format string
	// MCPTool is the tool an mcp-registry server's agent calls (the
	// registry does not list tools); "": the server's short name.
	MCPTool string
	// FetchCard fetches a card given by URL (a2a-cards); nil refuses such
	// items.
	FetchCard CardFetcher
	// FetchDoc fetches a nested catalog or an MCP server card given by URL
	// (ai-catalog); nil refuses such entries.
	FetchDoc DocFetcher
}

// Items streams r's items as registry batch items, numbered from 0. A
// syntax error in the middle of a JSON document (mcp-registry) ends the
// stream with one refused item saying where; an item that is malformed on
// its own is refused alone.
func Items(ctx context.Context, r io.Reader, opts Options) (iter.Seq[registry.BatchItem], error) {
	switch opts.Format {
	case "", FormatJSONL:
		return jsonLines(r, decodeRegistration), nil
	case FormatMCPRegistry:
		return mcpServers(r, opts.MCPTool), nil
	case FormatAICatalog:
		return catalogItems(ctx, r, opts), nil
	case FormatA2ACards:
		return jsonLines(r, func(raw []byte) (registry.Input, error) { return decodeCardItem(ctx, raw, opts.FetchCard) }), nil
	}
	return nil, fmt.Errorf("unknown format %q (one of %s)", opts.Format, strings.Join(Formats, ", "))
}

// jsonLines reads one item per non-blank line (lines starting with # are
// comments), each decoded by decode. A line longer than MaxItemBytes is
// refused alone, without being held in memory, and reading goes on with
// the next line; a refusal names the line's number in the file.
func jsonLines(r io.Reader, decode func([]byte) (registry.Input, error)) iter.Seq[registry.BatchItem] {
	return func(yield func(registry.BatchItem) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		i, lineNo := 0, 0
		var buf []byte
		for {
			line, tooLong, err := readLine(br, buf[:0])
			buf = line
			if err != nil && err != io.EOF {
				yield(registry.BatchItem{Index: i, Err: fmt.Errorf("reading the file stopped after line %d (%d items): %w", lineNo, i, err)})
				return
			}
			if err == io.EOF && len(line) == 0 && !tooLong {
				return
			}
			lineNo++
			var it registry.BatchItem
			switch trimmed := bytes.TrimSpace(line); {
			case tooLong:
				it.Err = fmt.Errorf("line %d: %w", lineNo, ErrItemTooLong)
			case len(trimmed) == 0 || trimmed[0] == '#':
				if err == io.EOF {
					return
				}
				continue
			default:
				in, derr := decode(trimmed)
				if derr != nil {
					derr = fmt.Errorf("line %d: %w", lineNo, derr)
				}
				it.Input, it.Err = in, derr
			}
			it.Index = i
			if !yield(it) || err == io.EOF {
				return
			}
			i++
		}
	}
}

// ErrItemTooLong refuses an item (a line) over MaxItemBytes.
var ErrItemTooLong = fmt.Errorf("the line is longer than %d KiB, the most one item may be; split or shorten it", MaxItemBytes>>10)

// readLine reads the next line of br into buf (without its end of line).
// A line over MaxItemBytes is read to its end but not kept: tooLong is
// set and line is empty. err is io.EOF on the last line (which may have
// no newline) or once the input is done.
func readLine(br *bufio.Reader, buf []byte) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxItemBytes+2 { // room for "\r\n"
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		buf = bytes.TrimRight(buf, "\r\n")
		if !tooLong && len(buf) > MaxItemBytes {
			tooLong, buf = true, buf[:0]
		}
		return buf, tooLong, err
	}
}

// decodeRegistration reads one registration body, refusing unknown fields
// (a misspelt field would otherwise be silently dropped).
func decodeRegistration(raw []byte) (registry.Input, error) {
	var in registry.Input
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("not a registration body: %w", err)
	}
	if dec.More() {
		return in, errors.New("not a registration body: more than one JSON value on the line")
	}
	return in, nil
}

// Slug turns an outside name (an MCP server's reverse-DNS name, an A2A
// card's name) into an agent name: lower case letters, digits and single
// hyphens, 3 to 64 characters. A name cut to fit ends in a short hash of
// the whole, so two long names stay apart.
func Slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > agent.MaxNameLen {
		sum := sha256.Sum256([]byte(name))
		s = strings.TrimRight(s[:agent.MaxNameLen-9], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	for len(s) < agent.MinNameLen && s != "" {
		s += "-x"
	}
	return s
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// version is v when it is a semantic version, else "" (a listing's version
// must be one; an outside catalogue's odd version is not worth refusing
// the item for).
func version(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if agent.IsSemver(v) && len(v) <= agent.MaxVersionLen {
		return v
	}
	return ""
}
