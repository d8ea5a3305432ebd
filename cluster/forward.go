package cluster

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

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
	n, err := s.opts.Store.Nodes().Get(r.Context(), c.NodeID)
	if err != nil || (n.State != store.NodeActive && n.State != store.NodeDraining) {
		return false
	}
	target := &url.URL{Scheme: "http", Host: n.ClusterAddr}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			s.sign(pr.Out)
		},
		Transport: s.opts.Client.Transport,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			httpx.WriteError(w, &httpx.Error{Status: http.StatusBadGateway, Code: "node_unreachable",
				Message: fmt.Sprintf("call %s is held by node %s, which did not answer: %v", callID, n.ID, err)})
		},
	}
	l := s.opts.Log.Debug().Str("call_id", callID).Str("owner_node", n.ID).Str("path", r.URL.Path)
	l.Msg("forwarding call control to the call's node")
	proxy.ServeHTTP(w, r)
	return true
}
