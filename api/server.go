package api

import (
	"context"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"switchboard/api/httpx"
)

// Authorizer authenticates the bearer token of a request and checks that
// it may call route: unknown, disabled or expired keys are 401, a missing
// ACL or management right 403, an exceeded qps/qpm 429.
type Authorizer interface {
	Authorize(ctx context.Context, token string, route httpx.Route) (*httpx.Principal, error)
}

// Module contributes routes to the server.
type Module interface {
	Routes() []httpx.Route
}

// ReadyCheck reports whether one part of the appliance can take calls.
type ReadyCheck func(ctx context.Context) error

// Server is the HTTP API.
type Server struct {
	log    zerolog.Logger
	authz  Authorizer
	mux    *http.ServeMux
	ready  []ReadyCheck
	routes []httpx.Route
	// limited samples the log lines of refused (429) requests.
	limited logSampler
	// fails throttles sources that keep failing authentication.
	fails authFailures
}

// Option configures a Server.
type Option func(*Server)

// WithAuthFailLimit throttles a source address that sends limit requests
// with a key that does not authenticate within window: its requests are refused
// 429 until the window ends (defaults DefaultAuthFailLimit,
// DefaultAuthFailWindow; limit 0 turns it off).
func WithAuthFailLimit(limit int, window time.Duration) Option {
	return func(s *Server) { s.fails.limit, s.fails.window = limit, window }
}

// WithReadyCheck adds a readiness check to GET /readyz.
func WithReadyCheck(c ReadyCheck) Option { return func(s *Server) { s.ready = append(s.ready, c) } }

// WithMetrics serves the registry's metrics on GET /metrics.
func WithMetrics(g prometheus.Gatherer) Option {
	return func(s *Server) {
		s.mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
}

// New builds the server from the modules' routes.
func New(log zerolog.Logger, authz Authorizer, modules []Module, opts ...Option) *Server {
	s := &Server{log: log, authz: authz, mux: http.NewServeMux(),
		fails: authFailures{limit: DefaultAuthFailLimit, window: DefaultAuthFailWindow}}
	for _, o := range opts {
		o(s)
	}
	s.routes = append(s.routes,
		httpx.Route{Method: http.MethodGet, Pattern: "/healthz", Access: httpx.Public, Handler: s.healthz},
		httpx.Route{Method: http.MethodGet, Pattern: "/readyz", Access: httpx.Public, Handler: s.readyz},
	)
	for _, m := range modules {
		s.routes = append(s.routes, m.Routes()...)
	}
	s.register()
	return s
}

// Routes lists every route the server answers, for documentation and tests.
func (s *Server) Routes() []httpx.Route { return s.routes }

// register groups routes by pattern so that a known path with an unknown
// method is answered 405 with Allow, and an unknown path 404, both in the
// JSON error shape.
func (s *Server) register() {
	byPattern := map[string]map[string]httpx.Route{}
	var order []string
	for _, rt := range s.routes {
		if byPattern[rt.Pattern] == nil {
			byPattern[rt.Pattern] = map[string]httpx.Route{}
			order = append(order, rt.Pattern)
		}
		byPattern[rt.Pattern][rt.Method] = rt
	}
	for _, p := range order {
		methods := byPattern[p]
		allow := make([]string, 0, len(methods))
		for m := range methods {
			allow = append(allow, m)
		}
		sort.Strings(allow)
		allowHdr := strings.Join(allow, ", ")
		s.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			rt, ok := methods[r.Method]
			if !ok {
				httpx.WriteError(w, &httpx.Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
					Message: r.Method + " is not allowed on " + r.URL.Path, Allow: allowHdr})
				return
			}
			s.serve(w, r, rt)
		})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, httpx.NotFound("no route for %s", r.URL.Path))
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt httpx.Route) {
	if rt.Access != httpx.Public {
		src, now := sourceOf(r), time.Now()
		if left, blocked := s.fails.blocked(src, now); blocked {
			e := httpx.TooManyRequests(left)
			e.Message = "too many requests with a missing or unknown API key from this address; retry later"
			httpx.WriteError(w, e)
			return
		}
		p, err := s.authz.Authorize(r.Context(), bearer(r), rt)
		if err != nil {
			var he *httpx.Error
			if asHTTPError(err, &he) && he.Status == http.StatusUnauthorized && bearer(r) != "" {
				s.fails.fail(src, now)
			}
			httpx.WriteError(w, err)
			return
		}
		r = r.WithContext(httpx.WithPrincipal(r.Context(), p))
	}
	if err := rt.Handler(w, r); err != nil {
		var he *httpx.Error
		if !asHTTPError(err, &he) {
			zerolog.Ctx(r.Context()).Error().Err(err).Msg("request failed")
		}
		httpx.WriteError(w, err)
	}
}

// bearer extracts the token of an Authorization: Bearer header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// Handler returns the server's handler with logging and panic recovery.
// A path that is not in canonical form (a doubled slash, a dot segment)
// is 404 in the JSON error shape, where ServeMux would answer an HTML
// redirect.
func (s *Server) Handler() http.Handler {
	return s.logRequests(cors(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != strings.TrimSuffix(p, "/") && p != "/" {
			httpx.WriteError(w, httpx.NotFound("no route for %s", p))
			return
		}
		s.mux.ServeHTTP(w, r)
	})))
}

// readyTimeout bounds the readiness checks of one GET /readyz: a probe
// waits a few seconds at most, and a check that slow means not ready.
const readyTimeout = 2 * time.Second

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	for _, c := range s.ready {
		if err := c(ctx); err != nil {
			return httpx.Unavailable("not ready: "+err.Error(), time.Second)
		}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
