package numbers

import (
	"fmt"
	"net/http"

	"switchboard/api/httpx"
	"switchboard/store"
)

func (s *Service) create(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	var b createBody
	if err := httpx.Decode(r, httpx.MaxBody, &b); err != nil {
		return err
	}
	origin := deref(b.Origin)
	switch origin {
	case OriginProvisioned, OriginBYOTrunk:
	case "":
		return httpx.BadRequest("origin", "origin is required: %s or %s", OriginProvisioned, OriginBYOTrunk)
	default:
		return httpx.BadRequest("origin", "origin must be %s or %s", OriginProvisioned, OriginBYOTrunk)
	}
	name, err := checkName("name", deref(b.Name))
	if err != nil {
		return err
	}
	now := s.now().UTC()
	n := &store.PhoneNumber{ID: httpx.NewID("pn"), TeamID: httpx.TeamOf(ctx), Name: name, Origin: origin,
		InboundTrunkID: httpx.NewID("tr"), AllowedAddresses: []string{}, CreateTime: now, UpdateTime: now}

	areaCode := deref(b.AreaCode)
	if origin == OriginBYOTrunk {
		if areaCode != "" {
			return httpx.BadRequest("area_code", "area_code applies to %s numbers only", OriginProvisioned)
		}
		pn := deref(b.PhoneNumber)
		if pn == "" {
			return httpx.BadRequest("phone_number", "phone_number is required for %s numbers", OriginBYOTrunk)
		}
		if n.PhoneNumber, err = checkE164("phone_number", pn); err != nil {
			return err
		}
	} else {
		if deref(b.PhoneNumber) != "" {
			return httpx.BadRequest("phone_number", "phone_number applies to %s numbers only; %s numbers are allocated from the pool (filter with area_code)", OriginBYOTrunk, OriginProvisioned)
		}
		if areaCode != "" {
			if err := checkAreaCode(areaCode); err != nil {
				return err
			}
		}
	}

	if n.DTMFInband, err = checkInband(deref(b.DTMFInband)); err != nil {
		return err
	}
	if n.SRTP, err = checkSRTP(deref(b.SRTP)); err != nil {
		return err
	}
	if n.Codecs, err = checkCodecs(b.Codecs); err != nil {
		return err
	}
	n.Recording = b.Recording.On()
	n.AgentID = deref(b.AgentID)
	if n.AgentID != "" && b.Webhook != nil {
		return httpx.BadRequest("webhook", "agent_id and webhook are mutually exclusive: a number routes to one of them")
	}
	if b.Stream != nil && routes(n.AgentID, b.Webhook != nil, true) > 1 {
		return httpx.BadRequest("stream", "agent_id, webhook and stream are mutually exclusive: a number routes to one of them (a stream names its own fallback_agent_id)")
	}
	if err := s.applyContext(n, b.ContextURL, b.ContextTimeoutMS, present(map[string]bool{
		"context_url": b.ContextURL != nil, "context_timeout_ms": b.ContextTimeoutMS != nil,
	})); err != nil {
		return err
	}
	if err := checkContextRoute(n, b.Webhook != nil || b.Stream != nil); err != nil {
		return err
	}
	var (
		streamToken   *string
		createdStream *CreatedStream
	)
	if b.Stream != nil {
		sb := b.Stream
		if streamToken, err = s.applyStream(&n.Stream, sb, present(map[string]bool{"url": sb.URL != nil, "protocol": sb.Protocol != nil,
			"track": sb.Track != nil, "parameters": sb.Parameters != nil, "fallback_agent_id": sb.FallbackAgentID != nil,
			"auth_token": sb.AuthToken != nil})); err != nil {
			return err
		}
		if createdStream, err = s.sealStream(n.ID, &n.Stream, streamToken, true); err != nil {
			return err
		}
	}

	var password *string
	if b.SIPAuth != nil {
		sa := b.SIPAuth
		password, err = applySIPAuth(n, sa, present(map[string]bool{
			"auth_username": sa.AuthUsername != nil, "auth_password": sa.AuthPassword != nil, "allowed_addresses": sa.AllowedAddresses != nil,
		}))
		if err != nil {
			return err
		}
	}
	var (
		hook    *store.Webhook
		created *CreatedWebhook
	)
	if b.Webhook != nil {
		wb := b.Webhook
		hook = &store.Webhook{ID: httpx.NewID("wh"), PhoneNumberID: n.ID, CreateTime: now}
		token, err := applyWebhook(hook, wb, present(map[string]bool{
			"name": wb.Name != nil, "url": wb.URL != nil, "auth_url": wb.AuthURL != nil, "auth_token": wb.AuthToken != nil,
		}), n.Name)
		if err != nil {
			return err
		}
		if err := s.checkWebhookAddresses(hook); err != nil {
			return err
		}
		if created, err = s.sealWebhook(hook, token, true); err != nil {
			return err
		}
		n.WebhookID = hook.ID
	}
	if err := s.sealPassword(n, password); err != nil {
		return err
	}
	if b.Outbound != nil {
		ob := b.Outbound
		outPassword, err := s.applyOutbound(n, ob, present(map[string]bool{
			"uri": ob.URI != nil, "auth_username": ob.AuthUsername != nil, "auth_password": ob.AuthPassword != nil, "caller_id": ob.CallerID != nil,
		}))
		if err != nil {
			return err
		}
		if err := s.sealOutbound(n, outPassword); err != nil {
			return err
		}
	}

	var rec *Record
	err = s.st.Tx(ctx, func(tx store.Store) error {
		if n.AgentID != "" {
			if err := checkAgent(ctx, tx, n.AgentID); err != nil {
				return err
			}
		}
		if id := n.Stream.FallbackAgentID; id != "" {
			if err := checkAgentAs(ctx, tx, id, "stream.fallback_agent_id"); err != nil {
				return err
			}
		}
		if origin == OriginProvisioned {
			if n.PhoneNumber, err = s.allocate(ctx, tx, areaCode); err != nil {
				return err
			}
		}
		if err := tx.Numbers().Create(ctx, n, hook); err != nil {
			return err
		}
		if b.Registration != nil {
			if err := s.putRegistration(ctx, tx, n, b.Registration, b.Registration.present(), false); err != nil {
				return err
			}
		}
		if err := httpx.Audit(ctx, tx, "phone_number.create", "phone_number/"+n.ID,
			fmt.Sprintf("created %s number %s (%q)", n.Origin, n.PhoneNumber, n.Name)); err != nil {
			return err
		}
		rec, err = s.view(ctx, tx, n, nil)
		return err
	})
	if err != nil {
		return storeErr("create phone number", err)
	}
	s.registrationsChanged()
	httpx.WriteJSON(w, http.StatusOK, Response{PhoneNumber: rec, Webhook: created, Stream: createdStream})
	return nil
}

// sealPassword stores a changed digest password sealed ("" clears it).
func (s *Service) sealPassword(n *store.PhoneNumber, password *string) error {
	switch {
	case password == nil:
	case *password == "":
		n.AuthPasswordEnc = ""
	default:
		enc, err := s.seal(*password, passwordAAD(n.ID))
		if err != nil {
			return err
		}
		n.AuthPasswordEnc = enc
	}
	return nil
}

// sealWebhook seals a changed auth_token and, for a new webhook, makes its
// signing secret, which it returns to be shown this once.
func (s *Service) sealWebhook(w *store.Webhook, token *string, isNew bool) (*CreatedWebhook, error) {
	switch {
	case token == nil:
	case *token == "":
		w.AuthTokenEnc = ""
	default:
		enc, err := s.seal(*token, tokenAAD(w.ID))
		if err != nil {
			return nil, err
		}
		w.AuthTokenEnc = enc
	}
	if !isNew {
		return nil, nil
	}
	secret := s.newSecret()
	enc, err := s.seal(secret, secretAAD(w.ID))
	if err != nil {
		return nil, err
	}
	w.SigningSecretEnc = enc
	return &CreatedWebhook{WebhookID: w.ID, DispatchSigningSecret: secret}, nil
}
