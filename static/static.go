// Package static holds the portal's browser assets (htmx, the stylesheet and
// the small app script), embedded in the binary and addressed by
// content-hashed names so that browsers may cache them forever: a changed
// file gets a new URL.
package static

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"
)

//go:embed htmx.min.js app.css app.js chat.js chat.css theme.js
var files embed.FS

// Prefix is the URL path the assets are served under.
const Prefix = "/static/"

// Asset is one embedded file, ready to serve.
type Asset struct {
	Name        string // logical name, e.g. "app.css"
	Hashed      string // name with the content hash, e.g. "app.1a2b3c4d.css"
	ContentType string
	Body        []byte
	Gzip        []byte // Body gzip-compressed at start, or nil if that does not pay
	ETag        string // strong validator, the full content hash
}

// catalog is built once from the embedded files and never changed, so it
// is safe to share between goroutines.
type catalog struct {
	byName   map[string]*Asset
	byHashed map[string]*Asset
}

var assets = mustLoad()

func mustLoad() catalog {
	c, err := load(files)
	if err != nil {
		panic(fmt.Sprintf("static: %v", err)) // the embedded files are fixed at build time
	}
	return c
}

func load(fsys fs.FS) (catalog, error) {
	c := catalog{byName: map[string]*Asset{}, byHashed: map[string]*Asset{}}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return c, err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return c, err
		}
		a := newAsset(e.Name(), body)
		c.byName[a.Name] = a
		c.byHashed[a.Hashed] = a
	}
	return c, nil
}

func newAsset(name string, body []byte) *Asset {
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	ext := path.Ext(name)
	ct, ok := contentTypes[ext]
	if !ok {
		if ct = mime.TypeByExtension(ext); ct == "" {
			ct = "application/octet-stream"
		}
	}
	a := &Asset{
		Name:        name,
		Hashed:      strings.TrimSuffix(name, ext) + "." + h[:8] + ext,
		ContentType: ct,
		Body:        body,
		ETag:        `"` + h + `"`,
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(body)
	if zw.Close() == nil && buf.Len() < len(body)*9/10 {
		a.Gzip = buf.Bytes()
	}
	return a
}

// contentTypes pins the types of our own files, independent of the
// host's /etc/mime.types.
var contentTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
}

// Path returns the URL of the asset called name ("app.css" →
// "/static/app.1a2b3c4d.css"). It panics for an unknown name: asset names
// are constants in templates, so a typo is a programming error caught by
// the first test that renders the page.
func Path(name string) string {
	a, ok := assets.byName[name]
	if !ok {
		panic("static: no asset named " + name)
	}
	return Prefix + a.Hashed
}

// Lookup finds an asset by its hashed name (the part of the URL after
// Prefix). Unhashed names are not served, so every response can be cached
// as immutable.
func Lookup(hashed string) (*Asset, bool) {
	a, ok := assets.byHashed[hashed]
	return a, ok
}
