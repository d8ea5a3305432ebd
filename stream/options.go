package stream

import (
	"crypto/tls"
	"time"

	"switchboard/webhook"
)

// Protocols of a stream.
const (
	// ProtocolTwilio is the Twilio Media Streams protocol over a WebSocket.
	ProtocolTwilio = "twilio"
	// ProtocolAudioSocket is Asterisk's AudioSocket over TCP.
	ProtocolAudioSocket = "audiosocket"
)

// Tracks a stream sends to the bot.
const (
	// TrackInbound sends the caller's audio.
	TrackInbound = "inbound"
	// TrackBoth also sends what the caller hears (the bot's audio as it is
	// played).
	TrackBoth = "both"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultWriteTimeout   = 5 * time.Second
	// DefaultMaxQueue bounds the bot's audio waiting to be played: a bot
	// may send a whole sentence at once, but one that sends faster than
	// real time for longer floods the call, and its oldest audio goes.
	DefaultMaxQueue = 30 * time.Second
	// DefaultSendQueue is how many messages may wait for the bot (2 s of
	// the caller's audio); beyond it the caller's frames are dropped and
	// counted.
	DefaultSendQueue = 100
	// DefaultMaxMessage bounds one message from the bot (a media chunk of
	// 10 s of µ-law is 107 KB of base64).
	DefaultMaxMessage = 128 << 10
	// DefaultMaxMarks bounds the marks waiting for their audio to play.
	DefaultMaxMarks = 1024
)

// Options configure the streams of an appliance. Zero fields take the
// defaults.
type Options struct {
	// ConnectTimeout bounds the dial and the WebSocket upgrade; a bot that
	// does not answer within it is unreachable.
	ConnectTimeout time.Duration
	// WriteTimeout bounds each write to the bot.
	WriteTimeout time.Duration
	// MaxQueue bounds the bot's audio queued for the caller.
	MaxQueue time.Duration
	// SendQueue bounds the messages waiting to be written to the bot.
	SendQueue int
	// MaxMessage bounds one message read from the bot.
	MaxMessage int64
	// MaxMarks bounds the marks waiting for their audio.
	MaxMarks int
	// Addresses says which addresses a bot may have (as for webhooks: no
	// link-local or cloud metadata address), checked on the URL and on
	// every connection after resolution.
	Addresses webhook.AddressPolicy
	// TLS configures wss:// connections (nil: the system's roots, which
	// SSL_CERT_FILE and SSL_CERT_DIR extend). Certificates are verified.
	TLS *tls.Config
	// Metrics, when set, counts the streams.
	Metrics *Metrics
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = DefaultMaxQueue
	}
	if o.SendQueue <= 0 {
		o.SendQueue = DefaultSendQueue
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.MaxMarks <= 0 {
		o.MaxMarks = DefaultMaxMarks
	}
	return o
}
