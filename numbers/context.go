package numbers

import (
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// Bounds of context_timeout_ms: the caller hears ringing while the
// appliance waits, so the wait is short.
const (
	DefaultContextTimeoutMS = 1500
	MinContextTimeoutMS     = 100
	MaxContextTimeoutMS     = 10000
)

// applyContext writes the context fields of a body that has reports into
// n and checks them: context_url is an http(s) URL the webhook address
// policy allows ("" or null removes it), context_timeout_ms 100 to 10000
// (null: the default).
func (s *Service) applyContext(n *store.PhoneNumber, url *string, timeoutMS *int, has func(string) bool) error {
	if has("context_url") {
		n.ContextURL = deref(url)
		if n.ContextURL != "" {
			if err := checkURL("context_url", n.ContextURL); err != nil {
				return err
			}
			if err := s.addrs.CheckURL(n.ContextURL); err != nil {
				return httpx.BadRequest("context_url", "context_url must not target a link-local or cloud metadata address (%v); the setting webhooks.allow_addresses can allow it", err)
			}
		}
	}
	if has("context_timeout_ms") {
		n.ContextTimeoutMS = 0
		if timeoutMS != nil {
			if v := *timeoutMS; v < MinContextTimeoutMS || v > MaxContextTimeoutMS {
				return httpx.BadRequest("context_timeout_ms", "context_timeout_ms must be %d to %d", MinContextTimeoutMS, MaxContextTimeoutMS)
			}
			n.ContextTimeoutMS = *timeoutMS
		}
	}
	return nil
}

// checkContextRoute refuses a context_url on a webhook-routed number: its
// application learns the call from realtime.call.incoming.
func checkContextRoute(n *store.PhoneNumber, webhook bool) error {
	if n.ContextURL != "" && webhook {
		return httpx.BadRequest("context_url", "context_url applies to numbers routed to an agent (or to none, the context naming the agent); a webhook number's application gets the call in realtime.call.incoming, a stream's bot its start message")
	}
	return nil
}

// contextTimeout is the number's wait for its context_url.
func contextTimeout(n *store.PhoneNumber) time.Duration {
	ms := n.ContextTimeoutMS
	if ms == 0 {
		ms = DefaultContextTimeoutMS
	}
	return time.Duration(ms) * time.Millisecond
}
