package console

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"switchboard/api/httpx"
)

//go:embed static
var files embed.FS

// csp keeps the console to its own files and its own API: no inline
// script, nothing fetched from elsewhere.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Service serves the console's files.
type Service struct {
	static fs.FS
}

// New returns the console.
func New() *Service {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return &Service{static: sub}
}

// Routes are /console (a redirect) and the files under /console/.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{Method: http.MethodGet, Pattern: "/console", Access: httpx.Public, Handler: s.redirect},
		{Method: http.MethodGet, Pattern: "/console/{file...}", Access: httpx.Public, Handler: s.file},
	}
}

func (s *Service) redirect(w http.ResponseWriter, r *http.Request) error {
	http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
	return nil
}

// file serves one embedded file (index.html for /console/).
func (s *Service) file(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("file")
	if name == "" {
		name = "index.html"
	}
	if strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
		return httpx.NotFound("no console file %s", name)
	}
	b, err := fs.ReadFile(s.static, name)
	if err != nil {
		return httpx.NotFound("no console file %s", name)
	}
	h := w.Header()
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	// The microphone is the console's own, for "Talk to this agent".
	h.Set("Permissions-Policy", "microphone=(self)")
	_, _ = w.Write(b)
	return nil
}
