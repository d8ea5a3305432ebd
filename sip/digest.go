package sip

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/icholy/digest"
)

// authVerdict is the outcome of checking an Authorization header.
type authVerdict int

const (
	authMissing authVerdict = iota // no credentials for our realm: challenge
	authOK
	authStale  // right answer, expired nonce: challenge with stale=true
	authFailed // wrong answer or replay: counts as a failure
)

// nonceLen is timestamp (8) + random (8) + truncated HMAC (16).
const nonceLen = 32

// digestAuth is the server side of RFC 2617/7616/8760 digest
// authentication. Nonces are stateless (HMAC-signed timestamp and random
// bytes); replay is stopped by remembering the highest nonce-count used
// with each nonce until it expires.
type digestAuth struct {
	realm  string
	algs   []string
	ttl    time.Duration
	now    func() time.Time
	secret [32]byte

	mu        sync.Mutex
	used      map[string]nonceUse
	lastPrune time.Time
}

type nonceUse struct {
	nc      uint32
	expires time.Time
}

func newDigestAuth(realm string, algs []string, ttl time.Duration, now func() time.Time) *digestAuth {
	d := &digestAuth{realm: realm, algs: algs, ttl: ttl, now: now, used: map[string]nonceUse{}}
	if _, err := rand.Read(d.secret[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return d
}

func (d *digestAuth) newNonce() string {
	var b [nonceLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(d.now().UnixNano()))
	_, _ = rand.Read(b[8:16])
	m := hmac.New(sha256.New, d.secret[:])
	m.Write(b[:16])
	copy(b[16:], m.Sum(nil)[:16])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// checkNonce verifies the signature and returns the issue time.
func (d *digestAuth) checkNonce(n string) (time.Time, bool) {
	b, err := base64.RawURLEncoding.DecodeString(n)
	if err != nil || len(b) != nonceLen {
		return time.Time{}, false
	}
	m := hmac.New(sha256.New, d.secret[:])
	m.Write(b[:16])
	if !hmac.Equal(m.Sum(nil)[:16], b[16:]) {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b[:8]))), true
}

// challenges returns one header value per algorithm.
func (d *digestAuth) challenges(stale bool) []string {
	nonce := d.newNonce()
	out := make([]string, 0, len(d.algs))
	for _, alg := range d.algs {
		c := digest.Challenge{Realm: d.realm, Nonce: nonce, Algorithm: alg, QOP: []string{"auth"}, Stale: stale}
		out = append(out, c.String())
	}
	return out
}

// authResult explains a verdict for logs (never containing secrets).
type authResult struct {
	verdict  authVerdict
	username string
	reason   string
}

// verify checks the credentials in headers (Authorization or
// Proxy-Authorization values) for method against user/password.
func (d *digestAuth) verify(headers []string, method, user, password string) authResult {
	var cred *digest.Credentials
	for _, h := range headers {
		c, err := parseCredentials(h)
		if err != nil {
			return authResult{verdict: authFailed, reason: err.Error()}
		}
		if c.Realm == d.realm {
			cred = c
			break
		}
	}
	if cred == nil {
		return authResult{verdict: authMissing}
	}
	res := authResult{username: cred.Username}
	fail := func(reason string) authResult {
		res.verdict, res.reason = authFailed, reason
		return res
	}
	issued, ok := d.checkNonce(cred.Nonce)
	if !ok {
		// Not ours (or from before a restart): a fresh challenge, not a failure.
		res.verdict, res.reason = authMissing, "unknown nonce"
		return res
	}
	alg := strings.ToUpper(cred.Algorithm)
	if alg == "" {
		alg = "MD5"
	}
	if !slices.Contains(d.algs, alg) {
		return fail("algorithm not offered: " + cred.Algorithm)
	}
	if cred.QOP != "" && cred.QOP != "auth" {
		return fail("unsupported qop " + cred.QOP)
	}
	if cred.QOP == "auth" && (cred.Nc < 1 || cred.Cnonce == "") {
		return fail("missing nc or cnonce")
	}
	if cred.Userhash {
		return fail("userhash not supported")
	}
	chal := &digest.Challenge{Realm: d.realm, Nonce: cred.Nonce, Algorithm: alg}
	if cred.QOP == "auth" {
		chal.QOP = []string{"auth"}
	}
	want, err := digest.Digest(chal, digest.Options{Method: method, URI: cred.URI, Username: user, Password: password, Cnonce: cred.Cnonce, Count: cred.Nc})
	if err != nil {
		return fail("digest: " + err.Error())
	}
	userOK := subtle.ConstantTimeCompare([]byte(cred.Username), []byte(user)) == 1
	respOK := subtle.ConstantTimeCompare([]byte(strings.ToLower(cred.Response)), []byte(want.Response)) == 1
	if !userOK {
		return fail("unknown username")
	}
	if !respOK {
		return fail("wrong response")
	}
	now := d.now()
	if now.Sub(issued) > d.ttl || issued.After(now.Add(time.Minute)) {
		res.verdict, res.reason = authStale, "stale nonce"
		return res
	}
	if !d.markUsed(cred.Nonce, uint32(cred.Nc), cred.QOP == "", issued.Add(d.ttl)) {
		return fail("replayed nonce count")
	}
	res.verdict = authOK
	return res
}

// markUsed records nc for nonce and reports whether it is new. Without
// qop a nonce may be used only once.
func (d *digestAuth) markUsed(nonce string, nc uint32, oneTime bool, expires time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if now.Sub(d.lastPrune) > d.ttl {
		for k, u := range d.used {
			if now.After(u.expires) {
				delete(d.used, k)
			}
		}
		d.lastPrune = now
	}
	u, seen := d.used[nonce]
	if seen && (oneTime || nc <= u.nc) {
		return false
	}
	d.used[nonce] = nonceUse{nc: nc, expires: expires}
	return true
}

// parseCredentials parses one Authorization header value.
func parseCredentials(h string) (*digest.Credentials, error) {
	c, err := digest.ParseCredentials(strings.TrimSpace(h))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadCredentials, err)
	}
	if c.Username == "" || c.Nonce == "" || c.Response == "" {
		return nil, fmt.Errorf("%w: missing username, nonce or response", errBadCredentials)
	}
	return c, nil
}
