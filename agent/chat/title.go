package chat

import (
	"strings"

	"github.com/agentsite/agentsite/agent/mdtext"
)

// TitleText is a stored title as the side list shows it: text, without
// Markdown's markup (titles stored before titles were made plain, or
// given by the person, keep none either); a title that is all markup
// stays as it is.
func TitleText(title string) string {
	if t := strings.Join(strings.Fields(mdtext.Plain(title)), " "); t != "" {
		return t
	}
	return title
}
