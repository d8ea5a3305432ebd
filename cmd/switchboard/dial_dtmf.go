package main

import (
	"context"
	"fmt"
	"time"

	"switchboard/dtmf"
)

// dtmfInfoInterval is the pause between two SIP INFO key presses: one
// key (dtmf.DefaultKeyDuration) plus the gap every sender keeps.
const dtmfInfoInterval = dtmf.DefaultKeyDuration + dtmf.DefaultKeyGap

// infoTimeout bounds one INFO transaction (RFC 3261 Timer F is 32 s; a
// peer that has not answered in 10 s has lost the request).
const infoTimeout = 10 * time.Second

// infoSender is what sendInfoDigits needs of the call.
type infoSender interface {
	SendInfo(ctx context.Context, contentType string, body []byte) error
}

// sendInfoDigits sends each digit as SIP INFO application/dtmf-relay, one
// every dtmfInfoInterval, until done or ctx ends.
func sendInfoDigits(ctx context.Context, c infoSender, digits string, report func(d byte, err error)) {
	ms := dtmf.DefaultKeyDuration.Milliseconds()
	for i := range len(digits) {
		if i > 0 {
			t := time.NewTimer(dtmfInfoInterval)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		body := fmt.Appendf(nil, "Signal=%c\r\nDuration=%d\r\n", digits[i], ms)
		rctx, cancel := context.WithTimeout(ctx, infoTimeout)
		err := c.SendInfo(rctx, dtmf.ContentTypeDTMFRelay, body)
		cancel()
		if ctx.Err() != nil {
			return
		}
		report(digits[i], err)
	}
}
