package sip

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
)

// Transfer sends REFER to the caller inside the dialog (blind transfer,
// RFC 3515) with Refer-To target and Referred-By referredBy (our URI when
// empty), then follows the NOTIFY message/sipfrag progress until a final
// status. It returns nil when the transfer target answered 2xx, a
// *StatusError for a refused REFER or a failed transfer. The caller
// usually sends BYE after a successful transfer; the call context then
// ends with ErrRemoteBye.
func (c *Call) Transfer(ctx context.Context, target, referredBy string) error {
	return c.TransferWithProgress(ctx, target, referredBy, nil)
}

// TransferWithProgress is Transfer that reports each step to progress
// (when not nil), from the goroutine that called it: first the status of
// the REFER's own 2xx response (202 Accepted, or 200), then the status
// line of every NOTIFY sipfrag (100 Trying, 180 Ringing, …, the final
// one). A caller that must answer as soon as the far end accepted the
// REFER runs it in a goroutine and waits for the first report. headers
// (checked by CheckHeaders) are added to the REFER.
func (c *Call) TransferWithProgress(ctx context.Context, target, referredBy string, progress func(status int), headers ...Header) error {
	report := func(int) {}
	if progress != nil {
		report = progress
	}
	c.mu.Lock()
	if c.state != stateConfirmed {
		c.mu.Unlock()
		return fmt.Errorf("transfer: %w", c.stateErr())
	}
	if c.refer != nil {
		c.mu.Unlock()
		return fmt.Errorf("transfer: %w: a transfer is in progress", errCallState)
	}
	notes := make(chan int, 8)
	c.refer = notes
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.refer = nil
		c.mu.Unlock()
	}()
	if referredBy == "" {
		referredBy = c.dlg.local.String()
	}
	req := c.dlg.newRequest(sip.REFER, nil, append([]sip.Header{
		sip.NewHeader("Refer-To", angle(target)),
		sip.NewHeader("Referred-By", angle(referredBy)),
	}, sipHeaders(headers)...)...)
	rctx, cancel := context.WithTimeout(ctx, c.srv.opts.RequestTimeout)
	res, err := c.dlg.do(rctx, req)
	cancel()
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	if err := statusErr(req, res); err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	c.log.Info().Str("refer_to", target).Msg("REFER accepted, waiting for NOTIFY")
	report(res.StatusCode)
	timer := time.NewTimer(c.srv.opts.ReferTimeout)
	defer timer.Stop()
	for {
		select {
		case code := <-notes:
			report(code)
			switch {
			case code >= 200 && code < 300:
				c.log.Info().Int("status", code).Msg("transfer succeeded")
				return nil
			case code >= 300:
				return fmt.Errorf("transfer: %w", &StatusError{Method: "REFER", Status: code, Reason: "transfer target refused"})
			}
		case <-timer.C:
			return fmt.Errorf("transfer: no final NOTIFY after %s", c.srv.opts.ReferTimeout)
		case <-c.ctx.Done():
			return fmt.Errorf("transfer: %w", context.Cause(c.ctx))
		case <-ctx.Done():
			return fmt.Errorf("transfer: %w", context.Cause(ctx))
		}
	}
}

func angle(uri string) string {
	if strings.HasPrefix(uri, "<") {
		return uri
	}
	return "<" + uri + ">"
}

// onNotify takes the refer subscription's NOTIFYs (RFC 3515 section 2.4.5).
func (c *Call) onNotify(req *sip.Request, tx sip.ServerTransaction) {
	ev := req.GetHeader("Event")
	if ev == nil || !strings.EqualFold(strings.TrimSpace(strings.Split(ev.Value(), ";")[0]), "refer") {
		c.srv.respond(req, tx, 489, "Bad Event", nil)
		return
	}
	c.srv.respond(req, tx, 200, "OK", nil)
	code, ok := parseSipfrag(req.Body())
	if !ok {
		return
	}
	c.mu.Lock()
	ch := c.refer
	c.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- code:
	default:
	}
}

// parseSipfrag reads the status code of a message/sipfrag status line
// ("SIP/2.0 200 OK").
func parseSipfrag(body []byte) (int, bool) {
	line, _, _ := bytes.Cut(body, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 2 || !strings.HasPrefix(f[0], "SIP/") {
		return 0, false
	}
	code, err := strconv.Atoi(f[1])
	if err != nil || code < 100 || code > 699 {
		return 0, false
	}
	return code, true
}

// Replaces is the value of a Replaces header (RFC 3891) naming this
// call's dialog: Call-ID;to-tag=…;from-tag=…, the tags as the dialog's
// INVITE carried them in To and From (RFC 3891 section 6.1; RFC 5589
// section 7 puts it in the Refer-To of an attended transfer, so the
// transferee's INVITE takes this dialog's place). "" before the dialog
// is confirmed.
func (c *Call) Replaces() string {
	d := c.dlg
	d.mu.Lock()
	local, remote := d.localTag, d.remoteTag
	d.mu.Unlock()
	if remote == "" || local == "" {
		return ""
	}
	from, to := remote, local // a call we received: the caller's INVITE
	if c.placed != nil {
		from, to = local, remote // a call we placed: our INVITE
	}
	return d.callID + ";to-tag=" + to + ";from-tag=" + from
}

// ReferTarget is a Refer-To URI that asks the referred party to call
// target and replace the dialog named by replaces (a Replaces value, see
// Call.Replaces) with the new one: target?Replaces=<escaped value>
// (RFC 3261 section 19.1.1 escapes the header's ';' and '=').
func ReferTarget(target, replaces string) string {
	esc := strings.NewReplacer("%", "%25", ";", "%3B", "=", "%3D", "@", "%40", "?", "%3F", "&", "%26", " ", "%20")
	return target + "?Replaces=" + esc.Replace(replaces)
}
