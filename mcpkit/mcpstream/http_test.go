package mcpstream

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestReadBody(t *testing.T) {
	for name, tc := range map[string]struct {
		body    io.Reader
		length  int64
		ok      bool
		status  int
		rpcCode float64
	}{
		"within the cap":          {strings.NewReader("1234"), 4, true, 0, 0},
		"declared too long":       {strings.NewReader("12345"), 5, false, http.StatusRequestEntityTooLarge, -32600},
		"chunked, too long":       {io.MultiReader(strings.NewReader("123"), strings.NewReader("45")), -1, false, http.StatusRequestEntityTooLarge, -32600},
		"chunked, within the cap": {io.MultiReader(strings.NewReader("12"), strings.NewReader("34")), -1, true, 0, 0},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", tc.body)
		r.ContentLength = tc.length
		w := httptest.NewRecorder()
		body, ok := ReadBody(w, r, 4)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v", name, ok)
			continue
		}
		if ok {
			if string(body) != "1234" {
				t.Errorf("%s: body %q", name, body)
			}
			continue
		}
		var msg struct {
			Error struct{ Code float64 }
		}
		_ = json.Unmarshal(w.Body.Bytes(), &msg)
		if w.Code != tc.status || msg.Error.Code != tc.rpcCode {
			t.Errorf("%s: %d %s", name, w.Code, w.Body)
		}
	}
}

// TestCountFlushes: a handler behind CountFlushes can flush (mcp-go
// streams only then), and Streams see the count.
func TestCountFlushes(t *testing.T) {
	var seen *atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = r.Context().Value(flushCountKey{}).(*atomic.Int64)
		f, ok := w.(http.Flusher)
		if !ok {
			t.Fatal("no http.Flusher")
		}
		f.Flush()
		f.Flush()
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(CountFlushes(rec, httptest.NewRequest(http.MethodPost, "/", nil)))
	if seen == nil || seen.Load() != 2 || !rec.Flushed {
		t.Errorf("flushes counted %v, recorder flushed %v", seen, rec.Flushed)
	}
}
