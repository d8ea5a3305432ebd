package sip

import (
	"context"
	"fmt"
	"sync"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// dialog holds what is needed to send requests inside an established
// dialog (RFC 3261 section 12.2.1), for either side.
type dialog struct {
	client    *sipgo.Client
	callID    string
	local     sip.Uri
	localTag  string
	remote    sip.Uri
	remoteTag string
	contact   sip.ContactHeader
	transport string
	// peer is the address requests go to when there is no route set: the
	// source of the INVITE for the UAS side (so NATed callers are reached),
	// the dialed address for the UAC side.
	peer string
	// laddr, when set, is the UDP socket requests leave from (the UAC side
	// binds its own; sipgo would otherwise pick an ephemeral port).
	laddr *sip.Addr

	mu       sync.Mutex
	target   sip.Uri
	routeSet []sip.Uri
	cseq     uint32
}

// key identifies the dialog in the server's table: Call-ID and our tag.
func dialogKey(callID, localTag string) string { return callID + "\x00" + localTag }

func (d *dialog) setTarget(c *sip.ContactHeader) {
	if c == nil {
		return
	}
	d.mu.Lock()
	d.target = *c.Address.Clone()
	d.mu.Unlock()
}

// newRequest builds an in-dialog request with the next CSeq.
func (d *dialog) newRequest(method sip.RequestMethod, body []byte, headers ...sip.Header) *sip.Request {
	d.mu.Lock()
	d.cseq++
	cseq := d.cseq
	target := *d.target.Clone()
	routes := append([]sip.Uri(nil), d.routeSet...)
	d.mu.Unlock()

	req := sip.NewRequest(method, target)
	if d.laddr != nil {
		d.laddr.Copy(&req.Laddr)
	}
	from := &sip.FromHeader{Address: d.local, Params: sip.NewParams()}
	from.Params.Add("tag", d.localTag)
	to := &sip.ToHeader{Address: d.remote, Params: sip.NewParams()}
	if d.remoteTag != "" {
		to.Params.Add("tag", d.remoteTag)
	}
	callID := sip.CallIDHeader(d.callID)
	maxFwd := sip.MaxForwardsHeader(70)
	req.AppendHeader(from)
	req.AppendHeader(to)
	req.AppendHeader(&callID)
	req.AppendHeader(&sip.CSeqHeader{SeqNo: cseq, MethodName: method})
	req.AppendHeader(&maxFwd)
	for _, r := range routes {
		req.AppendHeader(&sip.RouteHeader{Address: r})
	}
	contact := d.contact
	req.AppendHeader(&contact)
	for _, h := range headers {
		req.AppendHeader(h)
	}
	req.SetBody(body)
	req.SetTransport(d.transport)
	if len(routes) > 0 {
		req.SetDestination(routes[0].HostPort())
	} else if d.peer != "" {
		req.SetDestination(d.peer)
	}
	return req
}

// do sends req in a client transaction and returns the final response.
func (d *dialog) do(ctx context.Context, req *sip.Request) (*sip.Response, error) {
	tx, err := d.client.TransactionRequest(ctx, req, sipgo.ClientRequestAddVia)
	if err != nil {
		return nil, fmt.Errorf("send %s: %w", req.Method, err)
	}
	return finalResponse(ctx, tx, req.Method)
}

// finalResponse waits for tx's final response (provisional ones are
// skipped) and ends the transaction; the error names method.
func finalResponse(ctx context.Context, tx sip.ClientTransaction, method sip.RequestMethod) (*sip.Response, error) {
	defer tx.Terminate()
	for {
		select {
		case res := <-tx.Responses():
			if res.IsProvisional() {
				continue
			}
			return res, nil
		case <-tx.Done():
			if err := tx.Err(); err != nil {
				return nil, fmt.Errorf("%s: %w", method, err)
			}
			return nil, fmt.Errorf("%s: transaction ended without response", method)
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
		}
	}
}

// StatusError is returned when the peer answers a request we sent with a
// non-2xx final response.
type StatusError struct {
	Method string
	Status int
	Reason string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("sip: %s answered %d %s", e.Method, e.Status, e.Reason)
}

func statusErr(req *sip.Request, res *sip.Response) error {
	if res.IsSuccess() {
		return nil
	}
	return &StatusError{Method: string(req.Method), Status: res.StatusCode, Reason: res.Reason}
}

// reasonHeader builds an RFC 3326 Reason header.
func reasonHeader(protocol string, cause int, text string) sip.Header {
	if text == "" {
		return sip.NewHeader("Reason", fmt.Sprintf("%s;cause=%d", protocol, cause))
	}
	return sip.NewHeader("Reason", fmt.Sprintf("%s;cause=%d;text=%q", protocol, cause, text))
}
