package app

import (
	"context"
	"errors"
	"fmt"

	"switchboard/agent"
	"switchboard/call"
	"switchboard/control"
	"switchboard/numbers"
	"switchboard/sip"
)

// sipNumbers answers the SIP server's number lookups from the store.
type sipNumbers struct{ n *numbers.Service }

func (a sipNumbers) LookupNumber(ctx context.Context, e164 string) (*sip.Route, error) {
	r, err := a.n.Resolve(ctx, e164)
	if errors.Is(err, numbers.ErrUnknownNumber) {
		return nil, fmt.Errorf("%w: %s", sip.ErrNumberNotFound, e164)
	}
	if err != nil {
		return nil, err
	}
	return &sip.Route{NumberID: r.NumberID, PhoneNumber: r.E164, AllowedAddresses: r.AllowedPrefixes,
		AuthUsername: r.AuthUsername, AuthPassword: r.AuthPassword}, nil
}

// router picks each call's conversation from its number's route.
type router struct {
	numbers *numbers.Service
	agents  *agent.Runtime
	control *control.Service
}

func (r router) Conversation(ctx context.Context, c *call.Call) (call.Conversation, error) {
	res, err := r.numbers.Resolve(ctx, c.SIP().Route().PhoneNumber)
	if err != nil {
		return nil, &call.RejectError{Status: 404, Reason: "Not Found", Err: err}
	}
	c.SetDTMFInband(call.Inband(res.DTMFInband))
	switch {
	case res.AgentID != "":
		c.SetRoute("agent:" + res.AgentID)
		return r.agents.Conversation(ctx, res.AgentID, c.Logger())
	case res.WebhookID != "":
		c.SetRoute("webhook:" + res.WebhookID)
		return r.control.Conversation(c, res), nil
	}
	return nil, &call.RejectError{Status: 480, Reason: "Temporarily Unavailable", Err: errors.New("the number routes nowhere")}
}
