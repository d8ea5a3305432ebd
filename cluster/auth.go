package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header carries a node's signature on a request to another node:
// "<node id>:<unix seconds>:<hex HMAC-SHA256>" over the node id, the time,
// the method and the request URI.
const Header = "X-Switchboard-Node"

// maxSkew bounds the age of a signature (and the clock difference between
// nodes it tolerates).
const maxSkew = 30 * time.Second

// Errors of Verify.
var (
	ErrUnsigned     = errors.New("cluster: request is not signed by a node")
	ErrBadSignature = errors.New("cluster: bad node signature")
)

func mac(secret []byte, node string, ts int64, method, uri string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(node + "\n" + strconv.FormatInt(ts, 10) + "\n" + method + "\n" + uri))
	return hex.EncodeToString(m.Sum(nil))
}

// sign puts this node's signature on r.
func (s *Service) sign(r *http.Request) {
	ts := s.opts.Now().Unix()
	r.Header.Set(Header, s.opts.NodeID+":"+strconv.FormatInt(ts, 10)+":"+mac(s.opts.Secret, s.opts.NodeID, ts, r.Method, r.URL.RequestURI()))
}

// Verify checks that r was signed by a node holding the cluster secret,
// recently, for this method and URI; it returns the signing node's id.
func (s *Service) Verify(r *http.Request) (string, error) {
	h := r.Header.Get(Header)
	if h == "" {
		return "", ErrUnsigned
	}
	parts := strings.SplitN(h, ":", 3)
	if len(parts) != 3 {
		return "", ErrBadSignature
	}
	ts, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", ErrBadSignature
	}
	if d := s.opts.Now().Sub(time.Unix(ts, 0)); d > maxSkew || d < -maxSkew {
		return "", ErrBadSignature
	}
	want := mac(s.opts.Secret, parts[0], ts, r.Method, r.URL.RequestURI())
	if !hmac.Equal([]byte(want), []byte(parts[2])) {
		return "", ErrBadSignature
	}
	return parts[0], nil
}
