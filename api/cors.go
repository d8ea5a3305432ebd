package api

import (
	"net/http"
	"strings"
)

// corsMaxAge is how long a browser may cache a preflight answer (seconds).
const corsMaxAge = "600"

// corsMethods are the methods the API's routes use.
const corsMethods = "GET, POST, PUT, PATCH, DELETE, OPTIONS"

// cors lets browser apps on any origin call the API with a bearer token,
// as hosted APIs do: the appliance uses no cookies, so any origin may be
// answered and credentials are never allowed. A preflight (OPTIONS with
// Access-Control-Request-Method) is answered here, before routing, with
// 204; other requests get the headers that let the page read the
// response, Location (a browser call's id) included.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", corsMethods)
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				h.Set("Access-Control-Allow-Headers", sanitizeHeaderList(req))
			}
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", "Location, Retry-After, Allow")
		next.ServeHTTP(w, r)
	})
}

// sanitizeHeaderList keeps the header names of a preflight's request
// list that are tokens (RFC 9110 field names), so nothing odd is echoed.
func sanitizeHeaderList(v string) string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" || len(f) > 64 {
			continue
		}
		ok := true
		for _, c := range f {
			if !(c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, f)
		}
	}
	return strings.Join(out, ", ")
}
