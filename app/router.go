package app

import (
	"context"
	"errors"
	"fmt"

	"switchboard/call"
	"switchboard/control"
	"switchboard/numbers"
	"switchboard/outbound"
	"switchboard/sip"
	"switchboard/store"
)

// sipNumbers answers the SIP server's number lookups from the store: the
// one read of an INVITE, whose result (call.Route) travels with the call.
type sipNumbers struct{ n *numbers.Service }

func (a sipNumbers) LookupNumber(ctx context.Context, e164 string) (*sip.Route, error) {
	r, err := a.n.Resolve(ctx, e164)
	if errors.Is(err, numbers.ErrUnknownNumber) {
		return nil, fmt.Errorf("%w: %s", sip.ErrNumberNotFound, e164)
	}
	if err != nil {
		return nil, err
	}
	route := callRoute(r)
	return &sip.Route{NumberID: r.NumberID, PhoneNumber: r.E164, AllowedAddresses: r.AllowedPrefixes,
		AuthUsername: r.AuthUsername, AuthPassword: r.AuthPassword, SRTP: sip.SRTPPolicy(r.SRTP), Codecs: r.Codecs, Call: route}, nil
}

// browserNumbers resolves a number of a team into the route a browser
// call to it takes (POST /v1/realtime/calls?phone_number_id=): the same
// route a phone call to it gets.
type browserNumbers struct {
	st interface {
		Get(ctx context.Context, id string) (*store.PhoneNumber, error)
	}
	sip sipNumbers
}

func (b browserNumbers) NumberRoute(ctx context.Context, teamID, id string) (call.Route, error) {
	pn, err := b.st.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && pn.TeamID != teamID) {
		return call.Route{}, fmt.Errorf("%w: %s", control.ErrUnknownNumber, id)
	}
	if err != nil {
		return call.Route{}, err
	}
	r, err := b.sip.LookupNumber(ctx, pn.PhoneNumber)
	if errors.Is(err, sip.ErrNumberNotFound) {
		return call.Route{}, fmt.Errorf("%w: %s", control.ErrUnknownNumber, id)
	}
	if err != nil {
		return call.Route{}, err
	}
	if r.Call == nil {
		return call.Route{}, fmt.Errorf("number %s: no route", id)
	}
	return *r.Call, nil
}

// callRoute is the call.Route of a resolved number: the one home of this
// conversion, for the calls it receives and those it places.
func callRoute(r *numbers.Resolved) *call.Route {
	route := &call.Route{NumberID: r.NumberID, PhoneNumber: r.E164, TeamID: r.TeamID, AgentID: r.AgentID,
		WebhookID: r.WebhookID, DTMFInband: call.Inband(r.DTMFInband), Recording: r.Recording,
		ContextURL: r.ContextURL, ContextTimeout: r.ContextTimeout}
	if w := r.Webhook; w != nil {
		route.Webhook = &call.WebhookTarget{ID: w.WebhookID, URL: w.URL, AuthURL: w.AuthURL, AuthToken: w.AuthToken, SigningSecret: w.SigningSecret}
	}
	if st := r.Stream; st != nil {
		route.Stream = &call.StreamTarget{URL: st.URL, Parameters: st.Parameters, Track: st.Track, Protocol: st.Protocol,
			FallbackAgentID: st.FallbackAgentID, AuthToken: st.AuthToken, SigningSecret: st.SigningSecret}
	}
	return route
}

// originNumbers reads the number a team places a call from
// (outbound.Numbers).
type originNumbers struct{ n *numbers.Service }

func (o originNumbers) Origin(ctx context.Context, teamID, e164 string) (*outbound.Origin, error) {
	r, err := o.n.Originate(ctx, teamID, e164)
	if errors.Is(err, numbers.ErrUnknownNumber) {
		return nil, fmt.Errorf("%w: %s", outbound.ErrUnknownNumber, e164)
	}
	if err != nil {
		return nil, err
	}
	return &outbound.Origin{Route: *callRoute(r.Resolved), SRTP: r.SRTP, Codecs: r.Codecs, TrunkURI: r.TrunkURI,
		AuthUsername: r.AuthUsername, AuthPassword: r.AuthPassword, CallerID: r.CallerID}, nil
}
