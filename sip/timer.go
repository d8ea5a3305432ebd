package sip

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// Session timers (RFC 4028): a call whose INVITE asks for them (a
// Session-Expires header, from the caller or a proxy on the way), or whose
// caller supports them, is refreshed within its interval by re-INVITE or
// UPDATE, by the side the refresher parameter names. As the refresher the
// server sends UPDATE (re-INVITE to a peer that does not allow UPDATE)
// every half interval; otherwise it expects the caller's refreshes and
// ends a call that missed one with BYE: its peer has vanished. A call the
// server places asks for a timer in its INVITE (Session-Expires, Min-SE,
// retried once after a 422) and keeps the one its 2xx settles the same
// way (placedTimer); the refresher parameter names the dialog's roles:
// uac is whoever sent the INVITE.

// tagTimer is the option tag of session timers.
const tagTimer = "timer"

// ErrSessionExpired means the session timer ran out: the peer did not
// refresh the session, or did not answer our refresh.
var ErrSessionExpired = errors.New("sip: session timer expired")

// sessionTimer is the negotiated timer of one call.
type sessionTimer struct {
	interval time.Duration
	// uasRefreshes: the server sends the refreshes (refresher=uas for a
	// call it answered, uac for one it placed).
	uasRefreshes bool
	// require: the peer supports timers; our 2xx says Require: timer.
	require bool
	// placed: the server sent the INVITE (it is the dialog's uac).
	placed bool
}

// ours is the refresher parameter that names the server.
func (t *sessionTimer) ours() string {
	if t.placed {
		return "uac"
	}
	return "uas"
}

func (t *sessionTimer) header() sip.Header {
	who := t.ours()
	if !t.uasRefreshes {
		who = map[string]string{"uac": "uas", "uas": "uac"}[who]
	}
	return sip.NewHeader("Session-Expires", fmt.Sprintf("%d;refresher=%s", int(t.interval/time.Second), who))
}

// placedTimer is the timer of a call we placed, from its 2xx: the
// interval and refresher it names, or, when it names none (a callee
// without timers, RFC 4028 section 7.2), the interval we asked for,
// refreshed by us.
func placedTimer(res *sip.Response, asked time.Duration) *sessionTimer {
	t := &sessionTimer{interval: asked, uasRefreshes: true, placed: true,
		require: listsTag(res, tagTimer, "Require", "Supported", "k")}
	se, refresher, ok := sessionExpires(res)
	if !ok {
		return t
	}
	t.interval = se
	t.uasRefreshes = refresher != "uas" // a 2xx names one; none: we, to be sure
	return t
}

// placedTimerHeaders ask for a session timer in a placed call's INVITE
// (RFC 4028 section 7.1): the interval and the smallest we take; the
// refresher is left to the callee.
func placedTimerHeaders(se, minSE time.Duration) []sip.Header {
	return []sip.Header{
		sip.NewHeader("Session-Expires", strconv.Itoa(int(se/time.Second))),
		sip.NewHeader("Min-SE", strconv.Itoa(int(minSE/time.Second))),
	}
}

// minSEOf reads the Min-SE of a 422 (RFC 4028 section 6): 0 when absent
// or not delta-seconds.
func minSEOf(res *sip.Response) time.Duration {
	v, ok := headerValue(res, "Min-SE")
	if !ok {
		return 0
	}
	v, _, _ = strings.Cut(v, ";")
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0
	}
	return time.Duration(n) * time.Second
}

// headers is what the timer reads of a request or a response.
type headers interface {
	GetHeader(name string) sip.Header
	GetHeaders(name string) []sip.Header
}

// headerValue returns the first of the named headers (long or compact
// form).
func headerValue(req headers, names ...string) (string, bool) {
	for _, n := range names {
		if h := req.GetHeader(n); h != nil {
			return h.Value(), true
		}
	}
	return "", false
}

// sessionExpires reads Session-Expires (compact x): the interval and the
// refresher parameter ("" when absent). ok is false without the header or
// with a value that is not delta-seconds.
func sessionExpires(req headers) (time.Duration, string, bool) {
	v, ok := headerValue(req, "Session-Expires", "x")
	if !ok {
		return 0, "", false
	}
	parts := strings.Split(v, ";")
	n, err := strconv.ParseUint(strings.TrimSpace(parts[0]), 10, 32)
	if err != nil || n == 0 {
		return 0, "", false
	}
	refresher := ""
	for _, p := range parts[1:] {
		if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(strings.TrimSpace(k), "refresher") {
			refresher = strings.ToLower(strings.TrimSpace(val))
		}
	}
	return time.Duration(n) * time.Second, refresher, true
}

// listsTag reports whether one of the named headers (comma-separated
// option tags or methods) lists tag.
func listsTag(req headers, tag string, names ...string) bool {
	for _, n := range names {
		for _, h := range req.GetHeaders(n) {
			for _, t := range strings.Split(h.Value(), ",") {
				if strings.EqualFold(strings.TrimSpace(t), tag) {
					return true
				}
			}
		}
	}
	return false
}

// timerRefusal is 422 with our Min-SE for an interval below it (RFC 4028
// section 8.1: answered at the INVITE and at each refresh).
func (s *Server) timerRefusal(req *sip.Request) *refusal {
	se, _, ok := sessionExpires(req)
	if !ok || se >= s.opts.MinSE {
		return nil
	}
	return &refusal{status: 422, reason: "Session Interval Too Small",
		headers: []sip.Header{sip.NewHeader("Min-SE", strconv.Itoa(int(s.opts.MinSE/time.Second)))}}
}

// negotiateTimer picks the call's session timer from its INVITE: the
// requested interval (or ours when the caller supports timers but asked
// for none), refreshed by whom the request names, else by the caller when
// it supports timers, else by us (RFC 4028 section 9). nil: no timer.
func (s *Server) negotiateTimer(req *sip.Request) *sessionTimer {
	supports := listsTag(req, tagTimer, "Supported", "k")
	se, refresher, ok := sessionExpires(req)
	switch {
	case ok:
	case supports:
		se = max(s.opts.SessionExpires, s.opts.MinSE)
	default:
		return nil
	}
	t := &sessionTimer{interval: se, require: supports}
	switch refresher {
	case "uas":
		t.uasRefreshes = true
	case "uac":
		t.uasRefreshes = !supports // a caller without timers cannot refresh
	default:
		t.uasRefreshes = !supports
	}
	return t
}

// timerHeaders are the Session-Expires (and Require: timer) of a 2xx to
// the INVITE or to a refresh.
func (c *Call) timerHeaders() []sip.Header {
	t := c.timer.Load()
	if t == nil {
		return nil
	}
	hs := []sip.Header{t.header()}
	if t.require {
		hs = append(hs, sip.NewHeader("Require", tagTimer))
	}
	return hs
}

// refreshed notes a refresh from the peer (a re-INVITE or UPDATE we
// accepted), taking a new interval it asks for.
func (c *Call) refreshed(req *sip.Request) {
	old := c.timer.Load()
	if old == nil {
		return
	}
	if se, refresher, ok := sessionExpires(req); ok && se >= c.srv.opts.MinSE {
		t := *old
		t.interval = se
		if refresher != "" {
			t.uasRefreshes = refresher == t.ours()
		}
		c.timer.Store(&t)
	}
	select {
	case c.refreshes <- struct{}{}:
	default:
	}
}

// runSessionTimer keeps the timer of an answered call until it ends: it
// refreshes the session, or waits for the peer's refreshes and hangs up
// when one is missed (RFC 4028 section 10: BYE before the session
// expires, at the interval minus a third, or minus 32 s).
func (c *Call) runSessionTimer() {
	for {
		t := c.timer.Load()
		if t == nil {
			return
		}
		wait := t.interval - min(32*time.Second, t.interval/3)
		if t.uasRefreshes {
			wait = t.interval / 2
		}
		timer := time.NewTimer(wait)
		select {
		case <-c.ctx.Done():
			timer.Stop()
			return
		case <-c.refreshes:
			timer.Stop()
			continue
		case <-timer.C:
		}
		if !t.uasRefreshes {
			c.log.Warn().Dur("session_expires", t.interval).Msg("no session refresh from the peer: hanging up")
			c.expire("session timer expired: no refresh")
			return
		}
		if err := c.refresh(t); err != nil {
			c.log.Warn().Err(err).Msg("session refresh failed: hanging up")
			c.expire("session refresh failed")
			return
		}
	}
}

func (c *Call) expire(text string) {
	ctx, cancel := context.WithTimeout(context.Background(), c.srv.opts.RequestTimeout)
	defer cancel()
	_ = c.hangup(ctx, ErrSessionExpired, text)
}

// refresh sends one refresh: UPDATE without a body when the peer allows
// UPDATE, else a re-INVITE with our current SDP (then its ACK).
func (c *Call) refresh(t *sessionTimer) error {
	ctx, cancel := context.WithTimeout(c.ctx, c.srv.opts.RequestTimeout)
	defer cancel()
	headers := []sip.Header{t.header(), sip.NewHeader("Supported", tagTimer)}
	if c.peerUpdates {
		update := c.dlg.newRequest(sip.UPDATE, nil, headers...)
		res, err := c.dlg.do(ctx, update)
		if err != nil {
			return fmt.Errorf("session refresh: %w", err)
		}
		return statusErr(update, res)
	}
	c.mu.Lock()
	body := c.sdp.body
	c.mu.Unlock()
	invite := c.dlg.newRequest(sip.INVITE, body, append(headers, sip.NewHeader("Content-Type", "application/sdp"))...)
	res, err := c.dlg.do(ctx, invite)
	if err != nil {
		return fmt.Errorf("session refresh: %w", err)
	}
	if res.IsSuccess() {
		c.dlg.mu.Lock()
		c.dlg.cseq-- // ACK reuses the INVITE's CSeq
		c.dlg.mu.Unlock()
		ack := c.dlg.newRequest(sip.ACK, nil)
		ack.CSeq().SeqNo = invite.CSeq().SeqNo
		if err := c.dlg.client.WriteRequest(ack, sipgo.ClientRequestAddVia); err != nil {
			return fmt.Errorf("session refresh: ack: %w", err)
		}
	}
	return statusErr(invite, res)
}
