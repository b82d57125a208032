package store

import (
	"strings"
	"unicode/utf8"
)

// MaxConversationQuery bounds the words a conversation search looks for,
// in bytes (SearchConversations cuts a longer q).
const MaxConversationQuery = 200

// ContainsPattern is the LIKE pattern (escape character '\') that matches
// any text containing q literally: its % and _ are not wildcards. q is cut
// to MaxConversationQuery bytes, on a rune boundary.
func ContainsPattern(q string) string {
	if len(q) > MaxConversationQuery {
		q = q[:MaxConversationQuery]
		for !utf8.ValidString(q) {
			q = q[:len(q)-1]
		}
	}
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(q) + "%"
}
