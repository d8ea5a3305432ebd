package app

import (
	"context"
	"errors"
	"fmt"

	"switchboard/call"
	"switchboard/numbers"
	"switchboard/sip"
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
	route := &call.Route{NumberID: r.NumberID, PhoneNumber: r.E164, TeamID: r.TeamID, AgentID: r.AgentID,
		WebhookID: r.WebhookID, DTMFInband: call.Inband(r.DTMFInband), Recording: r.Recording}
	if w := r.Webhook; w != nil {
		route.Webhook = &call.WebhookTarget{ID: w.WebhookID, URL: w.URL, AuthURL: w.AuthURL, AuthToken: w.AuthToken, SigningSecret: w.SigningSecret}
	}
	return &sip.Route{NumberID: r.NumberID, PhoneNumber: r.E164, AllowedAddresses: r.AllowedPrefixes,
		AuthUsername: r.AuthUsername, AuthPassword: r.AuthPassword, SRTP: sip.SRTPPolicy(r.SRTP), Codecs: r.Codecs, Data: route}, nil
}
