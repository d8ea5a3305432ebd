package store

import (
	"encoding/json"
	"time"
)

// APIKey is an API key or management key. Only the hash of its secret is
// kept; Redacted is the form shown after creation.
type APIKey struct {
	ID       string
	TeamID   string
	UserID   string
	Name     string
	Hash     string
	Redacted string
	// OldHash stays valid until OldExpire after a rotation.
	OldHash    string
	OldExpire  time.Time
	ACLs       []string
	QPS, QPM   int
	TPM        string
	Disabled   bool
	ExpireTime time.Time // zero: never
	// Management keys may call the /auth and /audit paths.
	Management bool
	ModifiedBy string
	CreateTime time.Time
	ModifyTime time.Time
}

// Agent is the record numbers route calls to. Its settings live in Doc as
// JSON owned by the agent package, so new settings need no migration.
type Agent struct {
	ID         string
	TeamID     string
	Name       string
	Doc        json.RawMessage
	CreateTime time.Time
	UpdateTime time.Time
}

// PhoneNumber is a number that routes SIP calls to an agent or a webhook.
type PhoneNumber struct {
	ID               string
	TeamID           string
	PhoneNumber      string // E.164
	Name             string
	Origin           string
	AgentID          string
	WebhookID        string
	AuthUsername     string
	AuthPasswordEnc  string // sealed with the master key; never plaintext
	AllowedAddresses []string
	InboundTrunkID   string
	// DTMFInband is the number's in-band DTMF detection: "" (the agent's
	// setting or the default), "auto", "on" or "off".
	DTMFInband string
	// Recording asks for the number's calls to be recorded.
	Recording bool
	// SRTP is the number's SRTP policy: "" (the appliance's rtp.srtp),
	// "off", "optional" or "required".
	SRTP string
	// Codecs is the number's codec preference, best first (empty: the
	// best codec both sides have).
	Codecs []string
	// Outbound is the number's outbound trunk (the calls it places).
	Outbound OutboundTrunk
	// ContextURL is asked for an agent-routed call's context while it
	// rings ("" for none); ContextTimeoutMS bounds it (0: the default).
	ContextURL       string
	ContextTimeoutMS int
	// Stream is the bot's media stream the number routes to (URL "": none).
	Stream     NumberStream
	CreateTime time.Time
	UpdateTime time.Time
}

// NumberStream is the bot's media stream a number routes to: its URL
// ("" when the number routes elsewhere), protocol (twilio or
// audiosocket), track (inbound or both), the start message's parameters,
// the agent that takes the call when the bot is gone, and the sealed
// bearer token and signing secret of the upgrade request.
type NumberStream struct {
	URL             string
	Protocol        string
	Track           string
	Parameters      map[string]string
	FallbackAgentID string
	AuthTokenEnc    string // sealed with the master key; never plaintext
	SecretEnc       string // sealed with the master key; never plaintext
}

// OutboundTrunk is where a number's outbound calls go: URI is the SIP URI
// of the carrier's trunk ("" when the number places no calls through
// one), Username and PasswordEnc answer its digest challenge, CallerID is
// the From user of the INVITE ("" for the number itself).
type OutboundTrunk struct {
	URI         string
	Username    string
	PasswordEnc string // sealed with the master key; never plaintext
	CallerID    string
}

// Webhook receives realtime.call.incoming events for one phone number.
type Webhook struct {
	ID               string
	PhoneNumberID    string
	Name             string
	URL              string
	AuthURL          string
	AuthTokenEnc     string // sealed
	SigningSecretEnc string // sealed
	CreateTime       time.Time
}

// AuditEvent records one change made through the API.
type AuditEvent struct {
	ID          string
	TeamID      string
	UserID      string
	KeyID       string
	Action      string // e.g. "api_key.create"
	Resource    string // e.g. "api_key/3f…"
	Description string
	Time        time.Time
}

// AuditQuery filters and orders an audit listing.
type AuditQuery struct {
	UserID     string
	EventID    string
	Query      string // full text over the description
	From, To   time.Time
	Descending bool
	Page       Page
}

// KeyQuery filters a key listing.
type KeyQuery struct {
	ActiveOnly bool
	// ACLFilters keeps keys that hold every one of these ACL strings.
	ACLFilters []string
	// UserID, when set, keeps only that user's keys.
	UserID string
	Now    time.Time
	Page   Page
}
