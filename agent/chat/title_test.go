package chat

import "testing"

// A conversation's title is text: a first message in Markdown shows in
// the side list without its markup.
func TestTitlePlainText(t *testing.T) {
	for in, want := range map[string]string{
		"what is 6*7?":                        "what is 6*7?",
		"**Bold** and *em* and `code`":        "Bold and em and code",
		"# Heading\n\nsome text":              "Heading some text",
		"[the docs](https://example.com) now": "the docs now",
		"- one\n- two":                        "one two",
		"> quoted\nline":                      "quoted line",
		"```go\nfunc main() {}\n```":          "func main() {}",
		"a <b>tag</b> & more":                 "a <b>tag</b> & more",
		"what is 6-7":                         "what is 6-7",
		"   ":                                 "Echo",
		"***":                                 "Echo",
	} {
		if got := title("Echo", in); got != want {
			t.Errorf("title(%q) = %q, want %q", in, got, want)
		}
	}
}
