package cluster

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"switchboard/api/httpx"
	"switchboard/store"
)

// Forward sends a call-control request for callID to the node that holds
// the call, and reports whether it did (then the response is written).
// It does not when the call's record names this node or no node, when the
// call has ended, when its node is not running, or when r was forwarded
// already: the local handler answers those (404 or 409).
func (s *Service) Forward(w http.ResponseWriter, r *http.Request, callID string) bool {
	if r.Header.Get(Header) != "" {
		return false
	}
	c, err := s.opts.Store.Calls().Get(r.Context(), callID)
	if err != nil || c.NodeID == "" || c.NodeID == s.opts.NodeID || !c.EndTime.IsZero() {
		return false
	}
	return s.ForwardToNode(w, r, c.NodeID)
}

// ForwardToNode sends r to node (what lives on that node's disk: a call's
// recording) and reports whether it did: not to this node, to a node that
// is not running, or a request forwarded already.
func (s *Service) ForwardToNode(w http.ResponseWriter, r *http.Request, node string) bool {
	if r.Header.Get(Header) != "" || node == "" || node == s.opts.NodeID {
		return false
	}
	n, err := s.opts.Store.Nodes().Get(r.Context(), node)
	if err != nil || (n.State != store.NodeActive && n.State != store.NodeDraining) {
		return false
	}
	target, err := baseURL(n.ClusterAddr)
	if err != nil {
		return false
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			s.sign(pr.Out)
		},
		Transport: s.opts.Client.Transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			httpx.WriteError(w, &httpx.Error{Status: http.StatusBadGateway, Code: "node_unreachable",
				Message: fmt.Sprintf("node %s, which holds %s, did not answer: %v", n.ID, r.URL.Path, err)})
		},
	}
	l := s.opts.Log.Debug().Str("owner_node", n.ID).Str("path", r.URL.Path)
	l.Msg("forwarding to the node that holds the call")
	proxy.ServeHTTP(w, r)
	return true
}

// baseURL is the URL of a node's HTTP API: its registered address is
// host:port (plain HTTP) or https://host:port (a node serving HTTPS).
func baseURL(addr string) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cluster: bad node address %q", addr)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}
