package web

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent/mdtext"
)

// Ago describes how long before now t was, in the coarse words people use
// in lists ("just now", "5 min ago", "3 h ago", "2 days ago").
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "just now"
	case d < 45*time.Second:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", max(1, int(d.Round(time.Minute)/time.Minute)))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	default:
		return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
	}
}

// timeFormat is unambiguous for a planet-wide audience.
const timeFormat = "2006-01-02 15:04:05 UTC"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format(timeFormat)
}

func isoTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// pageTitle is the document title of a page.
func pageTitle(title string) string {
	if title == "" || title == "AgentHub" {
		return "AgentHub"
	}
	return title + " · AgentHub"
}

// excerpt shortens s to about n runes on a word boundary, for cards. The
// result is still plain text and is escaped by templ.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	cut := strings.LastIndexFunc(string(r), unicode.IsSpace)
	if cut < n/2 {
		cut = len(string(r))
	}
	return strings.TrimRightFunc(string(r)[:cut], func(c rune) bool { return unicode.IsSpace(c) || unicode.IsPunct(c) }) + "…"
}

// shortID abbreviates a long identifier (peer IDs, agent ids) in the middle.
func shortID(s string) string {
	if len(s) <= 16 {
		return s
	}
	return s[:8] + "…" + s[len(s)-6:]
}

// initials are the one or two letters in an agent's avatar.
func initials(displayName, name string) string {
	src := displayName
	if strings.TrimSpace(src) == "" {
		src = name
	}
	var out []rune
	for _, w := range strings.FieldsFunc(src, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r, _ := utf8.DecodeRuneInString(w)
		out = append(out, unicode.ToUpper(r))
		if len(out) == 2 {
			break
		}
	}
	if len(out) == 0 {
		return "?"
	}
	return string(out)
}

// avatarClass picks one of eight avatar colours from the id, so an agent
// keeps its colour everywhere (a class, since inline styles are not allowed).
func avatarClass(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return "avatar avatar-" + strconv.Itoa(int(h.Sum32()%8))
}

func statusLabel(status string) string {
	switch status {
	case "online":
		return "Online"
	case "stale":
		return "Quiet"
	case "offline":
		return "Offline"
	}
	return "Unknown"
}

// statusTitle explains a liveness word in one line (its tooltip and its
// accessible description): what it means for someone who wants an answer.
func statusTitle(status string) string {
	switch status {
	case "online":
		return "Its node is on the network: its heartbeats arrive."
	case "stale":
		return "Its node has been quiet for a while (missed heartbeats): it may not answer."
	case "offline":
		return "Its node is gone or its listing expired: it will not answer."
	}
	return "Status not known."
}

func statusClass(status string) string {
	switch status {
	case "online", "stale", "offline":
		return "badge badge-" + status
	}
	return "badge"
}

// agentHref is the detail page of an agent.
func agentHref(id string) string { return "/agents/" + url.PathEscape(id) }

// PublisherHref is the page of one publisher's agents: every listing a
// node signed, or with an owner, those of one person's account on it.
func PublisherHref(publisher, owner string) string {
	h := "/publishers/" + url.PathEscape(publisher)
	if owner != "" {
		h += "?owner=" + url.QueryEscape(owner)
	}
	return h
}

// plainDescription is a description's text without its Markdown, for a
// card's excerpt (the agent page renders the Markdown).
func plainDescription(md string) string { return mdtext.Plain(md) }

// tagHref is the search page filtered by one tag.
func tagHref(tag string) string { return "/agents?tag=" + url.QueryEscape(tag) }

// fieldErr returns the messages for key and for its elements ("tags"
// covers "tags[2]"; "skills[0].examples" covers "skills[0].examples[1]"),
// in key order, joined. Element messages of line-per-item fields get a
// "line N:" prefix; tag messages already quote the bad tag.
func fieldErr(errs map[string]string, key string) string {
	if len(errs) == 0 {
		return ""
	}
	var keys []string
	for k := range errs {
		if k == key || strings.HasPrefix(k, key+"[") {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return elemIndex(keys[i], key) < elemIndex(keys[j], key) })
	msgs := make([]string, 0, len(keys))
	for _, k := range keys {
		m := errs[k]
		if n := elemIndex(k, key); n >= 0 && key != "tags" {
			m = fmt.Sprintf("line %d: %s", n+1, m)
		}
		msgs = append(msgs, m)
	}
	return strings.Join(msgs, "; ")
}

// elemIndex is n for key+"[n]", or -1.
func elemIndex(k, key string) int {
	rest, ok := strings.CutPrefix(k, key+"[")
	if !ok {
		return -1
	}
	idx, _, _ := strings.Cut(rest, "]") // "3]" or "3].url"
	n, err := strconv.Atoi(idx)
	if err != nil {
		return -1
	}
	return n
}

// usesText is a card's usage signal: "12 conversations this week".
func usesText(n int) string { return plural(n, "conversation", "conversations") + " this week" }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func ownerText(owner string) string {
	if owner == "" {
		return "—"
	}
	return "@" + owner
}

func peersWord(n int) string {
	if n == 1 {
		return "peer"
	}
	return "peers"
}

func agentsWord(n int) string {
	if n == 1 {
		return "agent"
	}
	return "agents"
}

// withNext appends ?next= to path when next is set (next is already a safe
// local path, checked by the handler).
func withNext(path, next string) string {
	if next == "" {
		return path
	}
	return path + "?next=" + url.QueryEscape(next)
}

// mixedScriptsText is the notice for a name that mixes scripts:
// "This name mixes Latin and Cyrillic letters, which can imitate another name."
func mixedScriptsText(scripts []string) string {
	list := strings.Join(scripts, ", ")
	if n := len(scripts); n > 1 {
		list = strings.Join(scripts[:n-1], ", ") + " and " + scripts[n-1]
	}
	return "This name mixes " + list + " letters, which can imitate another name."
}

// reachabilityHint says in a sentence what a reachability means.
func reachabilityHint(r string) string {
	switch r {
	case "public":
		return "Other nodes can dial this node directly; it also relays for nodes behind NAT."
	case "private":
		return "This node is behind NAT: other nodes reach it through a relay, and hole punching turns those connections into direct ones when the NAT allows."
	case ReachLocal:
		return "This node listens only on loopback or private addresses, so only nodes on this machine or network can reach it; AutoNAT has nothing public to test. To join a wider network, listen on a public address or announce one with --announce."
	default:
		return "Not known yet: reachability is found once a few peers have tried to dial this node back."
	}
}

// verifiedTitle explains a verified badge: what was proved, and that it
// is about the node's operator, not its agents.
func verifiedTitle(domains []string) string {
	d := strings.Join(domains, ", ")
	return "This node proved it controls " + d + " (DNS TXT or HTTPS); it says who runs the node, not what its agents do."
}
