package numbers

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"switchboard/api/httpx"
	"switchboard/store"
)

// update applies a PATCH. Every rule of a number must hold afterwards; a
// webhook object changes the fields it holds on the existing webhook (same
// id and signing secret) or, when the number had none, creates one whose
// secret is returned this once.
func (s *Service) update(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	b, f, err := decodePatch(r)
	if err != nil {
		return err
	}
	var (
		rec           *Record
		created       *CreatedWebhook
		createdStream *CreatedStream
	)
	err = s.st.Tx(ctx, func(tx store.Store) error {
		n, err := getOwned(ctx, tx, r.PathValue("id"))
		if err != nil {
			return err
		}
		var hook *store.Webhook
		if n.WebhookID != "" {
			hook, err = tx.Numbers().Webhook(ctx, n.ID)
			if errors.Is(err, store.ErrNotFound) {
				hook, err = nil, nil
			}
			if err != nil {
				return err
			}
		}
		hadHook := hook != nil

		if f.has("origin") && b.Origin != nil && deref(b.Origin) != n.Origin {
			return httpx.BadRequest("origin", "the origin of a number cannot change")
		}
		if f.has("name") {
			if n.Name, err = checkName("name", deref(b.Name)); err != nil {
				return err
			}
		}
		if f.has("recording") {
			n.Recording = b.Recording.On()
		}
		if f.has("codecs") {
			if n.Codecs, err = checkCodecs(b.Codecs); err != nil {
				return err
			}
		}
		if f.has("srtp") {
			if n.SRTP, err = checkSRTP(deref(b.SRTP)); err != nil {
				return err
			}
		}
		if f.has("dtmf_inband") {
			if n.DTMFInband, err = checkInband(deref(b.DTMFInband)); err != nil {
				return err
			}
		}
		if f.has("phone_number") {
			if n.Origin != OriginBYOTrunk {
				return httpx.BadRequest("phone_number", "only %s numbers can change their phone_number", OriginBYOTrunk)
			}
			if n.PhoneNumber, err = checkE164("phone_number", deref(b.PhoneNumber)); err != nil {
				return err
			}
		}
		if f.has("agent_id") {
			n.AgentID = deref(b.AgentID)
		}
		if err := s.applyContext(n, b.ContextURL, b.ContextTimeoutMS, f.has); err != nil {
			return err
		}

		var token *string
		isNewHook := false
		if f.has("webhook") {
			if f.null("webhook") {
				hook = nil
			} else {
				if hook == nil {
					hook = &store.Webhook{ID: httpx.NewID("wh"), PhoneNumberID: n.ID, CreateTime: s.now().UTC()}
					isNewHook = true
				}
				if token, err = applyWebhook(hook, b.Webhook, f.sub("webhook").has, n.Name); err != nil {
					return err
				}
				if err := s.checkWebhookAddresses(hook); err != nil {
					return err
				}
			}
		}

		var (
			streamToken *string
			isNewStream bool
		)
		if f.has("stream") {
			if f.null("stream") {
				n.Stream = store.NumberStream{}
			} else {
				isNewStream = n.Stream.URL == ""
				if streamToken, err = s.applyStream(&n.Stream, b.Stream, f.sub("stream").has); err != nil {
					return err
				}
			}
		}

		var password *string
		if f.has("sip_auth") {
			if f.null("sip_auth") {
				n.AuthUsername, n.AllowedAddresses = "", []string{}
				empty := ""
				password = &empty
			} else if password, err = applySIPAuth(n, b.SIPAuth, f.sub("sip_auth").has); err != nil {
				return err
			}
		}

		if f.has("outbound_trunk") {
			if f.null("outbound_trunk") {
				n.Outbound = store.OutboundTrunk{}
			} else {
				outPassword, err := s.applyOutbound(n, b.Outbound, f.sub("outbound_trunk").has)
				if err != nil {
					return err
				}
				if err := s.sealOutbound(n, outPassword); err != nil {
					return err
				}
			}
		}

		if routes(n.AgentID, hook != nil, n.Stream.URL != "") > 1 {
			param := "agent_id"
			switch {
			case f.has("stream") && !f.null("stream"):
				param = "stream"
			case f.has("webhook") && !f.null("webhook"):
				param = "webhook"
			}
			return httpx.BadRequest(param, "agent_id, webhook and stream are mutually exclusive: a number routes to one of them (set the others to null)")
		}
		if f.has("agent_id") && n.AgentID != "" {
			if err := checkAgent(ctx, tx, n.AgentID); err != nil {
				return err
			}
		}
		if f.has("stream") && n.Stream.FallbackAgentID != "" {
			if err := checkAgentAs(ctx, tx, n.Stream.FallbackAgentID, "stream.fallback_agent_id"); err != nil {
				return err
			}
		}
		if f.has("stream") && n.Stream.URL != "" {
			if createdStream, err = s.sealStream(n.ID, &n.Stream, streamToken, isNewStream); err != nil {
				return err
			}
		}
		if err := s.sealPassword(n, password); err != nil {
			return err
		}
		if err := checkContextRoute(n, hook != nil); err != nil {
			return err
		}
		if hook != nil {
			if created, err = s.sealWebhook(hook, token, isNewHook); err != nil {
				return err
			}
			n.WebhookID = hook.ID
		} else {
			n.WebhookID = ""
		}
		n.UpdateTime = s.now().UTC()
		if err := tx.Numbers().Update(ctx, n); err != nil {
			return err
		}
		if f.has("registration") {
			var rb *registrationBody
			if !f.null("registration") {
				rb = b.Registration
			}
			if err := s.putRegistration(ctx, tx, n, rb, f.sub("registration").has, rb == nil); err != nil {
				return err
			}
		}
		switch {
		case hook != nil && f.has("webhook"):
			if err := tx.Numbers().PutWebhook(ctx, hook); err != nil {
				return err
			}
		case hook == nil && hadHook:
			if err := tx.Numbers().DeleteWebhook(ctx, n.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if err := httpx.Audit(ctx, tx, "phone_number.update", "phone_number/"+n.ID,
			fmt.Sprintf("updated number %s (%q): %s", n.PhoneNumber, n.Name, strings.Join(sortedKeys(f), ", "))); err != nil {
			return err
		}
		rec, err = s.view(ctx, tx, n, nil)
		return err
	})
	if err != nil {
		return storeErr("update phone number", err)
	}
	s.registrationsChanged()
	httpx.WriteJSON(w, http.StatusOK, Response{PhoneNumber: rec, Webhook: created, Stream: createdStream})
	return nil
}

func sortedKeys(f fields) []string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
