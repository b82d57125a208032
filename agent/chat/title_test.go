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

// A stored title shows as text too, and one that is all markup as it is.
func TestTitleText(t *testing.T) {
	for in, want := range map[string]string{"**x** y": "x y", "plain": "plain", "***": "***", "<b>first</b>": "<b>first</b>"} {
		if got := TitleText(in); got != want {
			t.Errorf("TitleText(%q) = %q, want %q", in, got, want)
		}
	}
}
