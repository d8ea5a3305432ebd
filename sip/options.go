package sip

import (
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Options configures a Server. The zero value of every field means its
// documented default; call WithDefaults to see the effective values.
type Options struct {
	// Addr is the UDP and TCP listen address. Default "127.0.0.1:5060".
	// Port 0 picks a free port (UDP and TCP then get independent ports;
	// see Server.UDPAddr and Server.TCPAddr).
	Addr string
	// PublicAddr is the host[:port] put in Contact headers; default the
	// bound UDP address.
	PublicAddr string
	// TLSAddr is the SIP over TLS listen address, used when TLSCert and
	// TLSKey are both set. Default "127.0.0.1:5061".
	TLSAddr string
	// TLSCert and TLSKey are PEM files; TLS is enabled when both are set.
	TLSCert, TLSKey string
	// TLSCA is a PEM file of the authorities trusted for the TLS
	// connections the server opens (trunks, registrars); empty: the
	// system's.
	TLSCA string

	// RTPPublicIP is the address advertised in SDP answers (NAT); default
	// the address passed to Call.Answer.
	RTPPublicIP netip.Addr
	// SRTP says when calls use SRTP with SDES keys. Default SRTPOptional.
	SRTP SRTPPolicy
	// SRTPOverPlain lets SDES keys travel over UDP or TCP signalling,
	// where anyone on the path reads them. Default false: only over TLS.
	SRTPOverPlain bool

	// ChallengeStatus is 401 (WWW-Authenticate) or 407
	// (Proxy-Authenticate). Default 401.
	ChallengeStatus int
	// Realm is the digest realm. Default "switchboard".
	Realm string
	// DigestAlgorithms are the challenges sent, one header each, in order
	// of preference. Default SHA-256 then MD5 (RFC 8760). Peers that read
	// only the first header and know only MD5 (sipp 3.6) need {"MD5"}.
	DigestAlgorithms []string
	// NonceTTL is how long a digest nonce is accepted; older nonces are
	// answered stale=true. Default 30s.
	NonceTTL time.Duration
	// AuthFailLimit is how many failed digest answers one source address
	// may send within AuthFailWindow before its INVITEs are refused with
	// 403 without checking. Default 10.
	AuthFailLimit int
	// AuthFailWindow is the counting window and block time. Default 5m.
	AuthFailWindow time.Duration
	// SourceFailLimit is how many failing requests (malformed messages,
	// unknown numbers, refused INVITEs, requests outside any dialog) one
	// source address may send within SourceFailWindow before it is
	// blocked: everything it sends is then dropped unanswered, except in
	// the dialogs of its calls in progress. Default 100.
	SourceFailLimit int
	// SourceFailWindow is the window failing requests are counted over.
	// Default 10s.
	SourceFailWindow time.Duration
	// SourceBlockTime is how long a blocked source stays blocked.
	// Default 1m.
	SourceBlockTime time.Duration
	// SourceMaxConnections is how many TCP/TLS connections one source
	// address may hold open; more are closed as they are accepted.
	// Default 32.
	SourceMaxConnections int
	// MinSE is the smallest session timer interval accepted (RFC 4028
	// Min-SE); an INVITE asking for less gets 422. Default 90s, the
	// RFC's floor (tests go below it).
	MinSE time.Duration
	// SessionExpires is the session timer interval used with a caller
	// that supports timers without asking for one. Default 30m.
	SessionExpires time.Duration

	// MaxCalls is the number of concurrent calls; more INVITEs get 503
	// with Retry-After. Default 500.
	MaxCalls int
	// RetryAfter is the Retry-After value sent with 503. Default 30s.
	RetryAfter time.Duration
	// DrainTimeout is how long Shutdown lets calls go on before BYE.
	// Default 30s.
	DrainTimeout time.Duration

	// TrunkPrefix is stripped from called numbers that arrive without "+"
	// (see the package documentation). Default none.
	TrunkPrefix string
	// DefaultCountry is the ISO 3166 region used to read national numbers.
	// Default "US".
	DefaultCountry string

	// ForwardHeaders are the INVITE headers a call keeps (Call.Headers):
	// names, case-insensitive, or prefixes ending in * ("X-*").
	// The one list: webhooks' sip_headers, agents' {{sip.NAME}} variables
	// and call records see what it keeps. Default DefaultForwardHeaders.
	ForwardHeaders []string

	// UserAgent is the User-Agent / Server header. Default "switchboard".
	UserAgent string
	// AckTimeout is how long Answer waits for the ACK of its 200 OK
	// (RFC 3261 uses 64*T1). Default 32s.
	AckTimeout time.Duration
	// RequestTimeout bounds in-dialog requests we send (BYE, REFER, INFO).
	// Default 10s.
	RequestTimeout time.Duration
	// ReferTimeout is how long Transfer waits for the final NOTIFY.
	// Default 60s.
	ReferTimeout time.Duration
}

// Defaults.
const (
	DefaultAddr                 = "127.0.0.1:5060"
	DefaultTLSAddr              = "127.0.0.1:5061"
	DefaultChallengeStatus      = 401
	DefaultRealm                = "switchboard"
	DefaultNonceTTL             = 30 * time.Second
	DefaultAuthFailLimit        = 10
	DefaultAuthFailWindow       = 5 * time.Minute
	DefaultSourceFailLimit      = 100
	DefaultSourceFailWindow     = 10 * time.Second
	DefaultSourceBlockTime      = time.Minute
	DefaultSourceMaxConnections = 32
	DefaultMinSE                = 90 * time.Second
	DefaultSessionExpires       = 30 * time.Minute
	DefaultMaxCalls             = 500
	DefaultRetryAfter           = 30 * time.Second
	DefaultDrainTimeout         = 30 * time.Second
	DefaultCountry              = "US"
	DefaultUserAgent            = "switchboard"
	DefaultAckTimeout           = 32 * time.Second
	DefaultRequestTimeout       = 10 * time.Second
	DefaultReferTimeout         = 60 * time.Second
)

// WithDefaults returns a copy of o with every zero field set to its
// default.
func (o Options) WithDefaults() Options {
	setStr := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	setDur := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	setInt := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	setStr(&o.Addr, DefaultAddr)
	setStr(&o.TLSAddr, DefaultTLSAddr)
	setInt(&o.ChallengeStatus, DefaultChallengeStatus)
	setStr(&o.Realm, DefaultRealm)
	if len(o.DigestAlgorithms) == 0 {
		o.DigestAlgorithms = []string{"SHA-256", "MD5"}
	}
	setDur(&o.NonceTTL, DefaultNonceTTL)
	setInt(&o.AuthFailLimit, DefaultAuthFailLimit)
	setDur(&o.AuthFailWindow, DefaultAuthFailWindow)
	setInt(&o.SourceFailLimit, DefaultSourceFailLimit)
	setDur(&o.SourceFailWindow, DefaultSourceFailWindow)
	setDur(&o.SourceBlockTime, DefaultSourceBlockTime)
	setInt(&o.SourceMaxConnections, DefaultSourceMaxConnections)
	setDur(&o.MinSE, DefaultMinSE)
	setDur(&o.SessionExpires, DefaultSessionExpires)
	setInt(&o.MaxCalls, DefaultMaxCalls)
	setDur(&o.RetryAfter, DefaultRetryAfter)
	setDur(&o.DrainTimeout, DefaultDrainTimeout)
	setStr(&o.DefaultCountry, DefaultCountry)
	setStr(&o.UserAgent, DefaultUserAgent)
	if len(o.ForwardHeaders) == 0 {
		o.ForwardHeaders = append([]string(nil), DefaultForwardHeaders...)
	}
	if o.SRTP == "" {
		o.SRTP = SRTPOptional
	}
	setDur(&o.AckTimeout, DefaultAckTimeout)
	setDur(&o.RequestTimeout, DefaultRequestTimeout)
	setDur(&o.ReferTimeout, DefaultReferTimeout)
	return o
}

func (o Options) validate() error {
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return fmt.Errorf("sip addr %q: %w", o.Addr, err)
	}
	if o.ChallengeStatus != 401 && o.ChallengeStatus != 407 {
		return fmt.Errorf("sip challenge status %d: must be 401 or 407", o.ChallengeStatus)
	}
	for _, a := range o.DigestAlgorithms {
		if a != "MD5" && a != "SHA-256" {
			return fmt.Errorf("sip digest algorithm %q: must be MD5 or SHA-256", a)
		}
	}
	if _, err := ParseSRTPPolicy(string(o.SRTP)); err != nil {
		return err
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return fmt.Errorf("sip tls: set both certificate and key or neither")
	}
	if _, err := newHeaderFilter(o.ForwardHeaders); err != nil {
		return err
	}
	return nil
}
