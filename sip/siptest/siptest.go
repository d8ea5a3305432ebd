// Package siptest is test support for the users of package sip: the
// tests' caller is a sip.Softphone (the SIP phone `switchboard dial`
// uses) on a loopback port, closed when the test ends.
package siptest

import (
	"testing"

	"github.com/rs/zerolog"

	"switchboard/sip"
)

// NewSoftphone starts a softphone on a free loopback UDP port; the test
// fails if it cannot, and closes it when it ends (after the cleanups
// registered later, such as a hangup).
func NewSoftphone(t testing.TB) *sip.Softphone {
	t.Helper()
	p, err := sip.NewSoftphone(sip.SoftphoneOptions{LocalAddr: "127.0.0.1:0"}, zerolog.Nop())
	if err != nil {
		t.Fatalf("softphone: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close softphone: %v", err)
		}
	})
	return p
}
