package numbers

import (
	"strings"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/store"
	"switchboard/stream"
)

// streamBody is a number's stream in POST and PATCH: where its calls'
// audio goes (a bot's media stream). In a PATCH the fields present change.
type streamBody struct {
	URL             *string           `json:"url"`
	Parameters      map[string]string `json:"parameters"`
	AuthToken       *string           `json:"auth_token"`
	Track           *string           `json:"track"`
	Protocol        *string           `json:"protocol"`
	FallbackAgentID *string           `json:"fallback_agent_id"`
}

// StreamInfo describes a number's stream, without its secrets.
type StreamInfo struct {
	URL        string            `json:"url"`
	Protocol   string            `json:"protocol"`
	Track      string            `json:"track"`
	Parameters map[string]string `json:"parameters"`
	// FallbackAgentID takes the call when the bot is unreachable or
	// leaves ("": the call ends).
	FallbackAgentID string `json:"fallback_agent_id,omitempty"`
}

// CreatedStream is returned once, by the request that gives a number its
// stream: the secret that signs the upgrade request (webhook-signature).
type CreatedStream struct {
	SigningSecret string `json:"signing_secret"`
}

// applyStream writes the stream fields that has reports into st (the
// number's current stream, zero when it has none), checks the result
// (the address policy included) and returns the new auth_token when it
// changes ("" clears it).
func (s *Service) applyStream(st *store.NumberStream, b *streamBody, has func(string) bool) (*string, error) {
	if has("url") {
		st.URL = deref(b.URL)
	}
	if has("protocol") {
		st.Protocol = deref(b.Protocol)
	}
	if has("track") {
		st.Track = deref(b.Track)
	}
	if has("parameters") {
		st.Parameters = b.Parameters
	}
	if has("fallback_agent_id") {
		st.FallbackAgentID = deref(b.FallbackAgentID)
	}
	var token *string
	if has("auth_token") {
		t := ""
		if b.AuthToken != nil {
			t = strings.TrimSpace(*b.AuthToken)
		}
		token = &t
	}
	t := call.StreamTarget{URL: st.URL, Protocol: st.Protocol, Track: st.Track, Parameters: st.Parameters}
	if token != nil {
		t.AuthToken = *token
	} else if st.AuthTokenEnc != "" {
		t.AuthToken = "kept" // only its protocol matters here
	}
	if e := stream.CheckTarget(&t, s.addrs); e != nil {
		return nil, httpx.BadRequest("stream."+e.Field, "%s", e.Message)
	}
	st.Protocol, st.Track = t.Protocol, t.Track
	if len(st.Parameters) == 0 {
		st.Parameters = nil
	}
	return token, nil
}

// sealStream seals a changed auth_token and, for a new stream, makes its
// signing secret, which it returns to be shown this once.
func (s *Service) sealStream(numberID string, st *store.NumberStream, token *string, isNew bool) (*CreatedStream, error) {
	switch {
	case token == nil:
	case *token == "":
		st.AuthTokenEnc = ""
	default:
		enc, err := s.seal(*token, streamTokenAAD(numberID))
		if err != nil {
			return nil, err
		}
		st.AuthTokenEnc = enc
	}
	if !isNew {
		return nil, nil
	}
	secret := s.newSecret()
	enc, err := s.seal(secret, streamSecretAAD(numberID))
	if err != nil {
		return nil, err
	}
	st.SecretEnc = enc
	return &CreatedStream{SigningSecret: secret}, nil
}

func streamTokenAAD(numberID string) string { return "phone_number:" + numberID + ":stream_auth_token" }
func streamSecretAAD(numberID string) string {
	return "phone_number:" + numberID + ":stream_signing_secret"
}

// streamView is the API form of a number's stream (nil: none).
func streamView(st store.NumberStream) *StreamInfo {
	if st.URL == "" {
		return nil
	}
	params := st.Parameters
	if params == nil {
		params = map[string]string{}
	}
	return &StreamInfo{URL: st.URL, Protocol: st.Protocol, Track: st.Track, Parameters: params, FallbackAgentID: st.FallbackAgentID}
}

// StreamDetails is a number's stream with its decrypted secrets, for the
// calls it routes. Never log it.
type StreamDetails struct {
	URL, Protocol, Track, FallbackAgentID string
	Parameters                            map[string]string
	AuthToken, SigningSecret              string
}

// streamDetails opens the sealed secrets of number numberID's stream (nil:
// none).
func (s *Service) streamDetails(numberID string, st store.NumberStream) (*StreamDetails, error) {
	if st.URL == "" {
		return nil, nil
	}
	d := &StreamDetails{URL: st.URL, Protocol: st.Protocol, Track: st.Track, FallbackAgentID: st.FallbackAgentID, Parameters: st.Parameters}
	var err error
	if d.AuthToken, err = s.open(st.AuthTokenEnc, streamTokenAAD(numberID)); err != nil {
		return nil, err
	}
	if d.SigningSecret, err = s.open(st.SecretEnc, streamSecretAAD(numberID)); err != nil {
		return nil, err
	}
	return d, nil
}

// routes counts the routes a number names (agent_id, webhook, stream): at
// most one may be set.
func routes(agentID string, hasWebhook, hasStream bool) int {
	n := 0
	for _, set := range []bool{agentID != "", hasWebhook, hasStream} {
		if set {
			n++
		}
	}
	return n
}
