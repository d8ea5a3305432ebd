package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/config"
	"switchboard/numbers"
	"switchboard/sip"
	"switchboard/sipleg"
	"switchboard/transfer"
	"switchboard/webhook"
)

// legDialer places the human's leg of a transfer: a tel: target through
// the outbound trunk of the number the call came in on (or was placed
// from), with the trunk's digest credentials and caller id, a sip: target
// directly when its address is allowed; the INVITE leaves from the SIP
// server's socket (sip.Server.Place) on a SIP leg of the call handler's
// options (sipleg.Handler.Leg).
//
// sip and legs are set once the SIP server exists. This is the wiring's
// one cycle: the SIP server runs the calls whose conversations place legs
// through it. No call, and so no transfer, exists before the server
// serves.
type legDialer struct {
	numbers *numbers.Service
	addrs   webhook.AddressPolicy
	sip     *sip.Server
	legs    *sipleg.Handler
}

var _ transfer.Dialer = (*legDialer)(nil)

// Resolve checks that a call on route may call target, and how.
func (d *legDialer) Resolve(ctx context.Context, route call.Route, target string) (transfer.Target, error) {
	if transfer.IsTel(target) {
		return d.trunk(ctx, route, strings.TrimPrefix(target, "tel:"))
	}
	host, err := sip.CheckTargetURI(target)
	if err != nil {
		return transfer.Target{}, httpx.BadRequest("target_uri", "target_uri is not a SIP URI the appliance can call (sip:user@host[:port][;transport=udp|tcp]): %v", err)
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if err := d.addrs.CheckAddr(a); err != nil {
			return transfer.Target{}, httpx.BadRequest("target_uri", "target_uri must not name a link-local or cloud metadata address (%v)", err)
		}
	}
	return transfer.Target{URI: target, From: callerID(route), Route: route}, nil
}

// trunk resolves an E.164 target through the outbound trunk of the
// call's number.
func (d *legDialer) trunk(ctx context.Context, route call.Route, e164 string) (transfer.Target, error) {
	if route.PhoneNumber == "" {
		return transfer.Target{}, httpx.BadRequest("target_uri", "this call has no number whose outbound trunk could call %s: transfer to a sip: URI", e164)
	}
	o, err := d.numbers.Originate(ctx, route.TeamID, route.PhoneNumber)
	if errors.Is(err, numbers.ErrUnknownNumber) {
		return transfer.Target{}, httpx.BadRequest("target_uri", "number %s is no longer your team's: it cannot call %s", route.PhoneNumber, e164)
	}
	if err != nil {
		return transfer.Target{}, fmt.Errorf("transfer: number %s: %w", route.PhoneNumber, err)
	}
	if o.TrunkURI == "" {
		return transfer.Target{}, &httpx.Error{Status: http.StatusBadRequest, Code: "no_outbound_trunk", Param: "target_uri",
			Message: fmt.Sprintf("number %s has no outbound_trunk to call %s through: set one with PATCH /v2/phone-numbers/{id}, or transfer to a sip: URI", route.PhoneNumber, e164)}
	}
	uri, err := sip.TrunkTarget(o.TrunkURI, e164)
	if err != nil {
		return transfer.Target{}, fmt.Errorf("transfer: trunk of %s: %w", route.PhoneNumber, err)
	}
	return transfer.Target{URI: uri, From: o.CallerID, AuthUsername: o.AuthUsername, AuthPassword: o.AuthPassword, Route: route, SRTP: o.SRTP}, nil
}

// callerID is the From user of a transfer to a SIP URI: the call's
// number.
func callerID(route call.Route) string {
	if route.PhoneNumber != "" {
		return route.PhoneNumber
	}
	return "switchboard"
}

// Dial places the human's dialog; its INVITE goes out with the leg's
// Answer.
func (d *legDialer) Dial(ctx context.Context, t transfer.Target, o transfer.DialOptions) (transfer.Leg, error) {
	r := t.Route
	pr := sip.PlaceRequest{Target: t.URI, From: t.From, AuthUsername: t.AuthUsername, AuthPassword: t.AuthPassword,
		Codecs: o.Codecs, RingTimeout: o.RingTimeout, Headers: sipHeaders(o.Headers),
		Route: &sip.Route{NumberID: r.NumberID, PhoneNumber: r.PhoneNumber, SRTP: sip.SRTPPolicy(t.SRTP), Call: &r}}
	in, err := d.sip.Place(ctx, pr)
	if err != nil {
		return nil, err
	}
	return d.legs.Leg(in), nil
}

// buildTransfers makes the transfer service; its dialer gets the SIP
// server once it exists (legDialer).
func (a *App) buildTransfers(cfg *config.Config, addrs webhook.AddressPolicy) error {
	dir := cfg.Transfer.AudioDir
	if dir == "" {
		dir = filepath.Join(cfg.DataDir, "audio")
	}
	a.dialer = &legDialer{numbers: a.numbers, addrs: addrs}
	var err error
	a.transfers, err = transfer.NewService(transfer.Options{Dialer: a.dialer, Voice: a.greeter, AudioDir: dir, HoldAudio: cfg.Transfer.HoldAudio,
		RingTimeout: cfg.Transfer.RingTimeout, AcceptTimeout: cfg.Transfer.AcceptTimeout, ReferNotifyTimeout: cfg.Transfer.ReferNotifyTimeout})
	return err
}

// sipHeaders are hs as package sip's (checked by sip.CheckHeaders where
// the request came in).
func sipHeaders(hs []call.Header) []sip.Header {
	var out []sip.Header
	for _, h := range hs {
		out = append(out, sip.Header{Name: h.Name, Value: h.Value})
	}
	return out
}
