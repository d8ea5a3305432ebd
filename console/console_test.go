package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func serve(t *testing.T, path string) *httptest.ResponseRecorder {
	t.Helper()
	s := New()
	mux := http.NewServeMux()
	for _, rt := range s.Routes() {
		h := rt.Handler
		mux.HandleFunc(rt.Method+" "+rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
			}
		})
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestConsoleFiles(t *testing.T) {
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/console/", "text/html; charset=utf-8", "<title>Switchboard console</title>"},
		{"/console/index.html", "text/html; charset=utf-8", `src="app.js"`},
		{"/console/app.js", "text/javascript; charset=utf-8", "sessionStorage"},
		{"/console/style.css", "text/css; charset=utf-8", "table"},
	} {
		rec := serve(t, tc.path)
		require.Equal(t, 200, rec.Code, tc.path)
		require.Equal(t, tc.ctype, rec.Header().Get("Content-Type"), tc.path)
		require.Contains(t, rec.Body.String(), tc.contains, tc.path)
		require.Contains(t, rec.Header().Get("Content-Security-Policy"), "script-src 'self'")
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
	}
	rec := serve(t, "/console")
	require.Equal(t, http.StatusMovedPermanently, rec.Code)
	require.Equal(t, "/console/", rec.Header().Get("Location"))
	for _, p := range []string{"/console/nope.js", "/console/..%2f..%2fetc/passwd", "/console/static/app.js"} {
		require.Equal(t, http.StatusNotFound, serve(t, p).Code, p)
	}
}

// The console never puts API data in the page as HTML, and never puts the
// key in a URL.
func TestConsoleScriptHygiene(t *testing.T) {
	b, err := files.ReadFile("static/app.js")
	require.NoError(t, err)
	src := string(b)
	require.NotContains(t, src, "innerHTML")
	require.NotContains(t, src, "outerHTML")
	require.NotContains(t, src, "insertAdjacentHTML")
	require.NotContains(t, src, "document.write")
	require.False(t, strings.Contains(src, "?key=") || strings.Contains(src, "&key=") || strings.Contains(src, "api_key="), "no key in a URL")
	require.NotContains(t, src, "localStorage", "the key is kept per tab only")
}
