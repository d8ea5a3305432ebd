package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the whole typed configuration of the appliance. Every field is
// declared once in the settings table (settings.go) with its flag, its
// environment variable, its default and its help text.
type Config struct {
	DataDir string `yaml:"data_dir"`
	// DatabaseURL selects PostgreSQL (postgres://…), shared by a fleet;
	// empty: SQLite in DataDir.
	DatabaseURL string `yaml:"database_url"`
	HTTPAddr    string `yaml:"http_addr"`
	LogLevel    string `yaml:"log_level"`
	LogFormat   string `yaml:"log_format"`
	TeamID      string `yaml:"team_id"`
	// DemoNumber is seeded on first start, routed to a demo agent.
	DemoNumber string `yaml:"demo_number"`

	// MaxBodyBytes bounds every HTTP request body except uploads.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ShutdownTimeout bounds the HTTP server's graceful stop.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// PprofAddr, when set, serves Go's profiler (net/http/pprof) there:
	// a loopback address only, never the API's listener.
	PprofAddr string `yaml:"pprof_addr"`

	// HTTP holds the HTTP API's TLS settings (the address is HTTPAddr).
	HTTP     HTTP     `yaml:"http"`
	SIP      SIP      `yaml:"sip"`
	Upstream Upstream `yaml:"upstream"`
	Echo     Echo     `yaml:"echo"`
	// DTMF configures how a caller's keys reach the model.
	DTMF   DTMF   `yaml:"dtmf"`
	Speech Speech `yaml:"speech"`
	// ToolsSecret signs custom tool calls; empty: a 0600 file in DataDir.
	ToolsSecret string `yaml:"-"`
	// Control configures webhook-routed calls and their controllers.
	Control Control `yaml:"control"`
	// Outbound limits the calls teams place (POST /v1/calls).
	Outbound Outbound `yaml:"outbound"`
	// Registration times the numbers' outbound registrations.
	Registration Registration `yaml:"registration"`
	// Streams times the bots' media streams (a number's or a call's stream route).
	Streams Streams `yaml:"streams"`
	// Transfer configures transfers to humans and hold.
	Transfer Transfer `yaml:"transfer"`
	// AnswerTimeout bounds how long a caller hears ringing while the
	// conversation gets ready.
	AnswerTimeout time.Duration `yaml:"answer_timeout"`
	RTP           RTP           `yaml:"rtp"`
	WebRTC        WebRTC        `yaml:"webrtc"`
	Health        Health        `yaml:"health"`
	Recording     Recording     `yaml:"recording"`
	Numbers       Numbers       `yaml:"numbers"`
	Keys          Keys          `yaml:"keys"`
	Records       Records       `yaml:"records"`
	// Cluster is this node's place in a fleet sharing database_url.
	Cluster  Cluster  `yaml:"cluster"`
	Webhooks Webhooks `yaml:"webhooks"`
}

// Webhooks configures the requests the appliance sends to URLs given
// through the API (webhooks, OAuth token endpoints, custom tools).
type Webhooks struct {
	// AllowAddresses lists CIDRs (or addresses) those requests may reach
	// although they are link-local or cloud metadata addresses.
	AllowAddresses []string `yaml:"allow_addresses"`
}

// Cluster configures a node of a fleet (several appliances sharing one
// PostgreSQL database behind a SIP load balancer).
type Cluster struct {
	// NodeID names this node; empty: the host name.
	NodeID string `yaml:"node_id"`
	// Addr is the host:port where the other nodes reach this node's HTTP
	// API; empty: http_addr.
	Addr string `yaml:"addr"`
	// Secret authenticates the nodes to each other (environment only).
	Secret string `yaml:"-"`
	// SIPHost is the fleet's SIP entry (Kamailio) that carriers and PBXs
	// send calls to, returned as sip_host of numbers; empty: sip.public_addr.
	SIPHost string `yaml:"sip_host"`
	// Heartbeat is how often the node beats in the registry.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// NodeTimeout is how long a node may go without a beat before another
	// node declares it lost and ends its calls' records.
	NodeTimeout time.Duration `yaml:"node_timeout"`
}

// Fleet reports whether the configuration makes this node one of a fleet:
// a PostgreSQL database, which other nodes may share.
func (c *Config) Fleet() bool { return c.DatabaseURL != "" }

// Streams holds the settings of bots' media streams.
type Streams struct {
	// ConnectTimeout bounds dialing a bot and its WebSocket upgrade.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// WriteTimeout bounds each write to a bot.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// MaxQueue bounds a bot's audio waiting to be played.
	MaxQueue time.Duration `yaml:"max_queue"`
}

// Outbound limits the calls the appliance places for a team.
type Outbound struct {
	// MaxConcurrent is a team's placed calls in progress at once.
	MaxConcurrent int `yaml:"max_concurrent"`
	// CallsPerSecond is the rate a team may place calls at.
	CallsPerSecond int `yaml:"calls_per_second"`
	// RingTimeout is the default ring time of a placed call.
	RingTimeout time.Duration `yaml:"ring_timeout"`
}

// Registration times the outbound registrations the numbers ask for (the
// appliance REGISTERs at a PBX or a carrier).
type Registration struct {
	// SyncInterval is how often a node reads the registrations to keep and
	// renews the leases of those it holds.
	SyncInterval time.Duration `yaml:"sync_interval"`
	// LeaseTTL is how long a node holds a registration without renewing:
	// another node of a fleet takes it over after that.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// RetryMin and RetryMax bound the backoff after failed REGISTERs.
	RetryMin time.Duration `yaml:"retry_min"`
	RetryMax time.Duration `yaml:"retry_max"`
	// RefreshBefore is how long before the registrar's expiry a
	// registration is refreshed.
	RefreshBefore time.Duration `yaml:"refresh_before"`
	// KeepAlive is how often the path to a registrar is pinged (0: never).
	KeepAlive time.Duration `yaml:"keepalive"`
	// Timeout bounds one REGISTER exchange.
	Timeout time.Duration `yaml:"timeout"`
}

// Records configures call records.
type Records struct {
	// AliveInterval is how often the records of calls in progress are
	// marked alive; after a crash they are closed at their last mark.
	AliveInterval time.Duration `yaml:"alive_interval"`
	// BatchInterval is the least time between two transactions of call
	// records: the changes of calls within it commit together.
	BatchInterval time.Duration `yaml:"batch_interval"`
}

// HTTP holds the TLS settings of the HTTP API: with both files set the API
// (and its WebSockets) is served over HTTPS/WSS only.
type HTTP struct {
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
}

// SIP holds the settings of the SIP endpoint.
type SIP struct {
	Addr       string `yaml:"addr"`
	PublicAddr string `yaml:"public_addr"`
	TLSAddr    string `yaml:"tls_addr"`
	TLSCert    string `yaml:"tls_cert"`
	TLSKey     string `yaml:"tls_key"`
	// TLSCA is a PEM file of the authorities trusted for the TLS
	// connections the appliance opens (trunks, registrars); empty: the
	// system's.
	TLSCA string `yaml:"tls_ca"`
	// ChallengeStatus is 401 (WWW-Authenticate) or 407 (Proxy-Authenticate).
	ChallengeStatus int `yaml:"challenge_status"`
	// DigestAlgorithms are the challenges offered, in order (RFC 8760).
	DigestAlgorithms []string      `yaml:"digest_algorithms"`
	NonceTTL         time.Duration `yaml:"nonce_ttl"`
	MaxCalls         int           `yaml:"max_calls"`
	DrainTimeout     time.Duration `yaml:"drain_timeout"`
	// AuthFailLimit is how many failed digest answers one source address may
	// send within AuthFailWindow before it is refused outright.
	AuthFailLimit  int           `yaml:"auth_fail_limit"`
	AuthFailWindow time.Duration `yaml:"auth_fail_window"`
	// SourceFailLimit failing requests of any kind from one source address
	// within SourceFailWindow block it for SourceBlockTime.
	SourceFailLimit  int           `yaml:"source_fail_limit"`
	SourceFailWindow time.Duration `yaml:"source_fail_window"`
	SourceBlockTime  time.Duration `yaml:"source_block_time"`
	// SourceMaxConnections caps the TCP/TLS connections of one source.
	SourceMaxConnections int `yaml:"source_max_connections"`
	// MinSE and SessionExpires are the session timer bounds (RFC 4028).
	MinSE          time.Duration `yaml:"min_se"`
	SessionExpires time.Duration `yaml:"session_expires"`
	// ForwardHeaders are the INVITE headers a call keeps (names, or
	// prefixes ending in *): the one list webhooks, agent variables and
	// records see.
	ForwardHeaders []string `yaml:"forward_headers"`
	// TrunkPrefix is stripped from called numbers that arrive without "+".
	TrunkPrefix    string `yaml:"trunk_prefix"`
	DefaultCountry string `yaml:"default_country"`
}

// Upstream is the realtime model provider.
type Upstream struct {
	URL            string        `yaml:"url"`
	Model          string        `yaml:"model"`
	APIKeyEnv      string        `yaml:"api_key_env"`
	AudioFormat    string        `yaml:"audio_format"`
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// ReconnectTimeout bounds the reopening of a session lost mid-call.
	ReconnectTimeout time.Duration `yaml:"reconnect_timeout"`
	// SessionFields is where the provider takes a session's voice and
	// turn detection: nested (audio.output.voice, the OpenAI GA API) or
	// top_level (voice, as the spec places them).
	SessionFields string `yaml:"session_fields"`
}

// Speech configures the TTS and STT engines.
type Speech struct {
	TTSEngine string `yaml:"tts_engine"`
	STTEngine string `yaml:"stt_engine"`
	// STTFallbackPriority schedules the local engine's decoders of the
	// agents' transcript fallback: idle, nice or normal.
	STTFallbackPriority string `yaml:"stt_fallback_priority"`
	UpstreamURL         string `yaml:"upstream_url"`
}

// Echo configures the embedded offline engine.
type Echo struct {
	VADThreshold    float64       `yaml:"vad_threshold"`
	SilenceDuration time.Duration `yaml:"silence_duration"`
	// MaxTurn bounds the audio a session keeps of a caller's turn.
	MaxTurn time.Duration `yaml:"max_turn"`
}

// DTMF configures the keypad of agent-routed calls.
type DTMF struct {
	// IdleTimeout flushes the keys a caller typed to the model when no
	// other key follows for this long (# and the caller speaking flush
	// at once).
	IdleTimeout time.Duration `yaml:"idle_timeout"`
}

// Control configures webhook-routed calls: how long they ring waiting for
// a controller, how long they outlive a dropped controller, and which
// engine their sessions (and client-secret sessions) use.
type Control struct {
	RingTimeout time.Duration `yaml:"ring_timeout"`
	Grace       time.Duration `yaml:"controller_grace"`
	Engine      string        `yaml:"engine"`
}

// RTP holds the settings of the media endpoint.
type RTP struct {
	Ports        PortRange     `yaml:"ports"`
	PublicIP     string        `yaml:"public_ip"`
	BindIP       string        `yaml:"bind_ip"`
	MediaTimeout time.Duration `yaml:"media_timeout"`
	JitterDelay  time.Duration `yaml:"jitter_delay"`
	RelatchAfter time.Duration `yaml:"relatch_after"`
	// SRTP is off, optional or required (SDES keys, RFC 4568).
	SRTP string `yaml:"srtp"`
	// SRTPSignalling is "tls" (SDES keys only over SIP TLS) or "any".
	SRTPSignalling string `yaml:"srtp_signalling"`
}

// WebRTC holds the settings of browser calls (/v1/realtime/calls).
type WebRTC struct {
	Ports          PortRange     `yaml:"ports"`
	PublicIP       string        `yaml:"public_ip"`
	BindIP         string        `yaml:"bind_ip"`
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
}

// Health holds the media health thresholds of calls.
type Health struct {
	LossThreshold float64       `yaml:"loss_threshold"`
	LossWindow    time.Duration `yaml:"loss_window"`
	NoAudio       time.Duration `yaml:"no_audio"`
	OneWay        time.Duration `yaml:"one_way"`
	EventInterval time.Duration `yaml:"event_interval"`
}

// Recording holds the settings of call recordings.
type Recording struct {
	Dir       string        `yaml:"dir"`
	Retention time.Duration `yaml:"retention"`
	Encrypt   bool          `yaml:"encrypt"`
}

// Numbers holds the settings of phone-number management.
type Numbers struct {
	// Pool lists the DIDs (E.164) that svc_provisioned numbers are
	// allocated from.
	Pool []string `yaml:"pool"`
}

// Keys holds the settings of API-key handling.
type Keys struct {
	// SecretKey is the base64 or hex AES-256 master key; empty means the
	// key file in the data directory.
	SecretKey string `yaml:"-"`
	// AdminKey, when set, is the owner key instead of a generated one.
	AdminKey string `yaml:"-"`
	// RotationGrace is the default validity of an old secret after rotate.
	RotationGrace time.Duration `yaml:"rotation_grace"`
	// DefaultQPS and DefaultQPM limit every key that sets no qps (qpm)
	// of its own, the owner key included; 0 is unlimited.
	DefaultQPS int `yaml:"default_qps"`
	DefaultQPM int `yaml:"default_qpm"`
	// AuthFailLimit requests with a key that does not authenticate from
	// one address within AuthFailWindow throttle that address (429) until
	// the window ends; 0 turns it off.
	AuthFailLimit  int           `yaml:"auth_fail_limit"`
	AuthFailWindow time.Duration `yaml:"auth_fail_window"`
}

// PortRange is an inclusive range of UDP ports, written "20000-20999".
type PortRange struct {
	Min, Max int
}

// String renders the range as "min-max".
func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Min, r.Max) }

// ParsePortRange parses "min-max".
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return PortRange{}, fmt.Errorf("port range %q: want min-max", s)
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil {
		return PortRange{}, fmt.Errorf("port range %q: not numbers", s)
	}
	r := PortRange{Min: a, Max: b}
	if a < 1024 || b > 65535 || a > b {
		return PortRange{}, fmt.Errorf("port range %q: want 1024 <= min <= max <= 65535", s)
	}
	if r.Max-r.Min < 3 {
		return PortRange{}, fmt.Errorf("port range %q: needs room for at least two RTP/RTCP pairs", s)
	}
	return r, nil
}

// UnmarshalYAML reads a port range from its string form.
func (r *PortRange) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParsePortRange(n.Value)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Load builds the configuration from the defaults, then the YAML file named
// by --config (or SWITCHBOARD_CONFIG), then the environment, then the flags
// given in args, each overriding the one before.
func Load(args []string, getenv func(string) string) (*Config, error) {
	c := &Config{}
	set := settings(c)
	for _, s := range set {
		if err := s.set(s.Default); err != nil {
			return nil, fmt.Errorf("default of %s: %w", s.Key, err)
		}
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	cfgPath := fs.String("config", getenv("SWITCHBOARD_CONFIG"), "YAML configuration file")
	flagVals := map[string]*string{}
	for _, s := range set {
		if s.Flag != "" {
			flagVals[s.Flag] = fs.String(s.Flag, "", s.Help)
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *cfgPath != "" {
		b, err := os.ReadFile(*cfgPath)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("config %s: %w", *cfgPath, err)
		}
	}
	for _, s := range set {
		if s.Env == "" {
			continue
		}
		if v := getenv(s.Env); v != "" {
			if err := s.set(v); err != nil {
				return nil, fmt.Errorf("%s: %w", s.Env, err)
			}
		}
	}
	var ferr error
	fs.Visit(func(f *flag.Flag) {
		for _, s := range set {
			if s.Flag == f.Name {
				if err := s.set(f.Value.String()); err != nil && ferr == nil {
					ferr = fmt.Errorf("--%s: %w", s.Flag, err)
				}
			}
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	return c, c.Validate()
}

// Validate checks the values that the parsers cannot check alone.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir: must not be empty"))
	}
	if u := c.DatabaseURL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		errs = append(errs, errors.New("database_url: must be a postgres:// URL (empty: SQLite in data_dir)"))
	}
	if c.Fleet() {
		// What one node seals or signs, every node must open or match.
		if len(c.Cluster.Secret) < 16 {
			errs = append(errs, errors.New("SWITCHBOARD_CLUSTER_SECRET: a node on a shared database needs the fleet's secret, at least 16 characters"))
		}
		if c.Keys.SecretKey == "" {
			errs = append(errs, errors.New("SWITCHBOARD_SECRET_KEY: the nodes on a shared database must share the master key of secrets at rest (a key file per node could not open the others' secrets)"))
		}
		if c.ToolsSecret == "" {
			errs = append(errs, errors.New("SWITCHBOARD_TOOLS_SECRET: the nodes on a shared database must sign custom tool calls with one secret"))
		}
	}
	if c.Cluster.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Cluster.Addr); err != nil {
			errs = append(errs, fmt.Errorf("cluster.addr: %w", err))
		}
	}
	if c.Cluster.Heartbeat <= 0 || c.Cluster.NodeTimeout < 2*c.Cluster.Heartbeat {
		errs = append(errs, errors.New("cluster.heartbeat and cluster.node_timeout: the timeout must be at least two heartbeats"))
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		errs = append(errs, fmt.Errorf("http_addr: %w", err))
	}
	if _, _, err := net.SplitHostPort(c.SIP.Addr); err != nil {
		errs = append(errs, fmt.Errorf("sip.addr: %w", err))
	}
	if c.PprofAddr != "" {
		if err := checkLoopbackAddr(c.PprofAddr); err != nil {
			errs = append(errs, fmt.Errorf("pprof_addr: %w", err))
		}
	}
	if c.SIP.ChallengeStatus != 401 && c.SIP.ChallengeStatus != 407 {
		errs = append(errs, errors.New("sip.challenge_status: must be 401 or 407"))
	}
	for _, a := range c.SIP.DigestAlgorithms {
		if a != "MD5" && a != "SHA-256" {
			errs = append(errs, fmt.Errorf("sip.digest_algorithms: %q is not MD5 or SHA-256", a))
		}
	}
	if len(c.SIP.DigestAlgorithms) == 0 {
		errs = append(errs, errors.New("sip.digest_algorithms: name at least one of MD5, SHA-256"))
	}
	if (c.HTTP.TLSCert == "") != (c.HTTP.TLSKey == "") {
		errs = append(errs, errors.New("http.tls_cert and http.tls_key: set both or neither"))
	}
	if (c.SIP.TLSCert == "") != (c.SIP.TLSKey == "") {
		errs = append(errs, errors.New("sip.tls_cert and sip.tls_key: set both or neither"))
	}
	if c.DTMF.IdleTimeout <= 0 {
		errs = append(errs, errors.New("dtmf.idle_timeout: must be positive"))
	}
	if c.Upstream.ReconnectTimeout <= 0 {
		errs = append(errs, errors.New("upstream.reconnect_timeout: must be positive"))
	}
	for _, a := range c.Webhooks.AllowAddresses {
		if _, err := netip.ParsePrefix(a); err != nil {
			if _, err := netip.ParseAddr(a); err != nil {
				errs = append(errs, fmt.Errorf("webhooks.allow_addresses: %q is not an address or a CIDR", a))
			}
		}
	}
	if c.Keys.AuthFailLimit < 0 || c.Keys.AuthFailWindow <= 0 {
		errs = append(errs, errors.New("keys.auth_fail_limit must be 0 (off) or more and keys.auth_fail_window positive"))
	}
	if c.Keys.DefaultQPS < 0 || c.Keys.DefaultQPM < 0 {
		errs = append(errs, errors.New("keys.default_qps and keys.default_qpm: must be 0 (unlimited) or more"))
	}
	if c.Records.AliveInterval < time.Second {
		errs = append(errs, errors.New("records.alive_interval: must be at least 1s"))
	}
	if c.Records.BatchInterval < 0 || c.Records.BatchInterval > 50*time.Millisecond {
		errs = append(errs, errors.New("records.batch_interval: must be between 0 and 50ms (a call's record waits up to this long before its transaction)"))
	}
	if c.SIP.MaxCalls < 1 {
		errs = append(errs, errors.New("sip.max_calls: must be at least 1"))
	}
	if c.SIP.MinSE < 90*time.Second {
		errs = append(errs, errors.New("sip.min_se: must be at least 90s (RFC 4028)"))
	}
	if c.SIP.SessionExpires < c.SIP.MinSE {
		errs = append(errs, errors.New("sip.session_expires: must be at least sip.min_se"))
	}
	if c.Health.LossThreshold <= 0 || c.Health.LossThreshold > 1 {
		errs = append(errs, errors.New("health.loss_threshold: must be over 0 and at most 1"))
	}
	for name, d := range map[string]time.Duration{"health.loss_window": c.Health.LossWindow, "health.no_audio": c.Health.NoAudio,
		"health.one_way": c.Health.OneWay, "health.event_interval": c.Health.EventInterval} {
		if d < time.Second {
			errs = append(errs, fmt.Errorf("%s: must be at least 1s", name))
		}
	}
	if c.Recording.Retention < 0 {
		errs = append(errs, errors.New("recording.retention: must not be negative (0 keeps recordings)"))
	}
	if c.RTP.PublicIP != "" {
		if _, err := netip.ParseAddr(c.RTP.PublicIP); err != nil {
			errs = append(errs, fmt.Errorf("rtp.public_ip: %w", err))
		}
	}
	if c.RTP.Ports.Min%2 != 0 {
		c.RTP.Ports.Min++
	}
	for k, v := range map[string]string{"webrtc.public_ip": c.WebRTC.PublicIP, "webrtc.bind_ip": c.WebRTC.BindIP} {
		if _, err := netip.ParseAddr(v); v != "" && err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	if c.WebRTC.ConnectTimeout <= 0 {
		errs = append(errs, errors.New("webrtc.connect_timeout: must be positive"))
	}
	switch c.RTP.SRTP {
	case "off", "optional", "required":
	default:
		errs = append(errs, errors.New("rtp.srtp: must be off, optional or required"))
	}
	switch c.RTP.SRTPSignalling {
	case "tls", "any":
	default:
		errs = append(errs, errors.New("rtp.srtp_signalling: must be tls or any"))
	}
	if c.RTP.RelatchAfter < 100*time.Millisecond || c.RTP.RelatchAfter > time.Minute {
		errs = append(errs, errors.New("rtp.relatch_after: must be within 100ms..1m"))
	}
	switch c.LogFormat {
	case "auto", "json", "console":
	default:
		errs = append(errs, errors.New("log_format: must be auto, json or console"))
	}
	if c.Upstream.URL != "" && !strings.HasPrefix(c.Upstream.URL, "ws://") && !strings.HasPrefix(c.Upstream.URL, "wss://") {
		errs = append(errs, errors.New("upstream.url: must be a ws:// or wss:// URL"))
	}
	switch c.Upstream.AudioFormat {
	case "pcm", "pcmu", "pcma":
	default:
		errs = append(errs, errors.New("upstream.audio_format: must be pcm, pcmu or pcma"))
	}
	switch c.Upstream.SessionFields {
	case "nested", "top_level":
	default:
		errs = append(errs, errors.New("upstream.session_fields: must be nested or top_level"))
	}
	if c.Echo.VADThreshold < 0 || c.Echo.VADThreshold > 1 {
		errs = append(errs, errors.New("echo.vad_threshold: must be within 0..1"))
	}
	if c.Control.RingTimeout <= 0 || c.Control.Grace <= 0 {
		errs = append(errs, errors.New("control.ring_timeout and control.controller_grace: must be positive"))
	}
	switch c.Control.Engine {
	case "", "echo", "upstream":
	default:
		errs = append(errs, errors.New("control.engine: must be echo, upstream or empty"))
	}
	if c.AnswerTimeout <= 0 {
		errs = append(errs, errors.New("answer_timeout: must be positive"))
	}
	if c.Streams.ConnectTimeout <= 0 || c.Streams.WriteTimeout <= 0 || c.Streams.MaxQueue <= 0 {
		errs = append(errs, errors.New("streams.connect_timeout, streams.write_timeout and streams.max_queue: must be positive"))
	}
	if c.Outbound.MaxConcurrent < 1 || c.Outbound.CallsPerSecond < 1 {
		errs = append(errs, errors.New("outbound.max_concurrent and outbound.calls_per_second: must be at least 1"))
	}
	if c.Outbound.RingTimeout < 5*time.Second || c.Outbound.RingTimeout > 120*time.Second {
		errs = append(errs, errors.New("outbound.ring_timeout: must be within 5s..120s"))
	}
	if r := c.Registration; r.SyncInterval <= 0 || r.LeaseTTL < 2*r.SyncInterval {
		errs = append(errs, errors.New("registration.sync_interval and registration.lease_ttl: the lease must last at least two syncs"))
	}
	if r := c.Registration; r.RetryMin <= 0 || r.RetryMax < r.RetryMin || r.RefreshBefore <= 0 || r.KeepAlive < 0 || r.Timeout <= 0 {
		errs = append(errs, errors.New("registration.retry_min, retry_max, refresh_before and timeout: must be positive, retry_max at least retry_min; registration.keepalive: 0 or positive"))
	}
	if c.Keys.RotationGrace <= 0 || c.Keys.RotationGrace > 7*24*time.Hour {
		errs = append(errs, errors.New("keys.rotation_grace: must be in (0, 168h]"))
	}
	if err := c.Transfer.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkLoopbackAddr accepts host:port whose host is a loopback address
// (127.0.0.0/8, ::1) or "localhost".
func checkLoopbackAddr(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address (127.0.0.1, ::1, localhost)", host)
}
