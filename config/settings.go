package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Setting is one configuration value: where it lives in the YAML file, its
// flag, its environment variable, its default and what it does.
type Setting struct {
	Key     string // YAML path, e.g. "sip.addr"
	Flag    string // flag name without dashes; empty when not a flag
	Env     string // environment variable; empty when none
	Default string
	Help    string
	set     func(string) error
}

func str(p *string) func(string) error { return func(v string) error { *p = v; return nil } }

func integer(p *int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		*p = n
		return nil
	}
}

func int64v(p *int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		*p = n
		return nil
	}
}

func duration(p *time.Duration) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration (like 30s)", v)
		}
		*p = d
		return nil
	}
}

func float(p *float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		*p = f
		return nil
	}
}

func boolean(p *bool) func(string) error {
	return func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		*p = b
		return nil
	}
}

func list(p *[]string) func(string) error {
	return func(v string) error {
		*p = nil
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				*p = append(*p, f)
			}
		}
		return nil
	}
}

func ports(p *PortRange) func(string) error {
	return func(v string) error {
		r, err := ParsePortRange(v)
		if err != nil {
			return err
		}
		*p = r
		return nil
	}
}

// settings is the single table of every configuration value, bound to c.
func settings(c *Config) []Setting {
	return []Setting{
		{"data_dir", "data-dir", "SWITCHBOARD_DATA_DIR", "./var", "directory for the SQLite database, the master key file and the owner key file", str(&c.DataDir)},
		{"database_url", "database-url", "SWITCHBOARD_DATABASE_URL", "", "PostgreSQL URL (postgres://user:password@host:5432/db) for a fleet of nodes sharing one database; empty: SQLite in data_dir", str(&c.DatabaseURL)},
		{"cluster.node_id", "node-id", "SWITCHBOARD_NODE_ID", "", "this node's id in a fleet (call records name it); empty: the host name", str(&c.Cluster.NodeID)},
		{"cluster.addr", "cluster-addr", "SWITCHBOARD_CLUSTER_ADDR", "", "host:port where the other nodes of a fleet reach this node's HTTP API; empty: http_addr", str(&c.Cluster.Addr)},
		{"", "", "SWITCHBOARD_CLUSTER_SECRET", "", "secret shared by the nodes of a fleet, which sign their requests to each other with it (at least 16 characters); required with database_url", str(&c.Cluster.Secret)},
		{"cluster.sip_host", "", "SWITCHBOARD_CLUSTER_SIP_HOST", "", "host[:port] of the fleet's SIP entry (Kamailio), shown as sip_host of numbers; empty: sip.public_addr", str(&c.Cluster.SIPHost)},
		{"cluster.heartbeat", "", "SWITCHBOARD_CLUSTER_HEARTBEAT", "1s", "how often a node of a fleet beats in the database", duration(&c.Cluster.Heartbeat)},
		{"cluster.node_timeout", "", "SWITCHBOARD_CLUSTER_NODE_TIMEOUT", "5s", "a node silent this long is lost: another node marks its calls ended", duration(&c.Cluster.NodeTimeout)},
		{"http_addr", "http-addr", "SWITCHBOARD_HTTP_ADDR", "127.0.0.1:8080", "listen address of the HTTP API", str(&c.HTTPAddr)},
		{"http.tls_cert", "http-tls-cert", "SWITCHBOARD_HTTP_TLS_CERT", "", "PEM certificate (chain) file: the HTTP API and its WebSockets are served over HTTPS/WSS; reloaded on SIGHUP or when the file changes", str(&c.HTTP.TLSCert)},
		{"http.tls_key", "http-tls-key", "SWITCHBOARD_HTTP_TLS_KEY", "", "PEM private key file of http.tls_cert", str(&c.HTTP.TLSKey)},
		{"log_level", "log-level", "SWITCHBOARD_LOG_LEVEL", "info", "debug, info, warn or error", str(&c.LogLevel)},
		{"log_format", "log-format", "SWITCHBOARD_LOG_FORMAT", "auto", "json, console, or auto (console on a terminal, JSON otherwise)", str(&c.LogFormat)},
		{"team_id", "", "SWITCHBOARD_TEAM_ID", "default", "the team that owns everything created without an explicit team", str(&c.TeamID)},
		{"demo_number", "demo-number", "SWITCHBOARD_DEMO_NUMBER", "+18005550100", "on first start (no numbers yet), this number is created and routed to a demo agent; empty: none", str(&c.DemoNumber)},
		{"max_body_bytes", "", "SWITCHBOARD_MAX_BODY_BYTES", "1048576", "largest accepted JSON request body (413 past it)", int64v(&c.MaxBodyBytes)},
		{"shutdown_timeout", "", "SWITCHBOARD_SHUTDOWN_TIMEOUT", "10s", "how long the HTTP server waits for requests in flight on stop", duration(&c.ShutdownTimeout)},
		{"pprof_addr", "pprof-addr", "SWITCHBOARD_PPROF_ADDR", "", "loopback host:port serving Go's profiler (/debug/pprof/, e.g. go tool pprof http://127.0.0.1:6060/debug/pprof/profile); empty: off", str(&c.PprofAddr)},

		{"sip.addr", "sip-addr", "SWITCHBOARD_SIP_ADDR", "127.0.0.1:5060", "SIP listen address (UDP and TCP)", str(&c.SIP.Addr)},
		{"sip.public_addr", "sip-public-addr", "SWITCHBOARD_SIP_PUBLIC_ADDR", "", "host[:port] that carriers and PBXs send calls to (sip_host of numbers, Contact); defaults to sip.addr", str(&c.SIP.PublicAddr)},
		{"sip.tls_addr", "sip-tls-addr", "SWITCHBOARD_SIP_TLS_ADDR", "127.0.0.1:5061", "SIP over TLS listen address, used when a certificate is set", str(&c.SIP.TLSAddr)},
		{"sip.tls_cert", "sip-tls-cert", "SWITCHBOARD_SIP_TLS_CERT", "", "PEM certificate file for SIP over TLS", str(&c.SIP.TLSCert)},
		{"sip.tls_key", "sip-tls-key", "SWITCHBOARD_SIP_TLS_KEY", "", "PEM private key file for SIP over TLS", str(&c.SIP.TLSKey)},
		{"sip.tls_ca", "", "SWITCHBOARD_SIP_TLS_CA", "", "PEM file of the certificate authorities trusted when the appliance connects over TLS (trunks, registrars); empty: the system's", str(&c.SIP.TLSCA)},
		{"sip.challenge_status", "", "SWITCHBOARD_SIP_CHALLENGE_STATUS", "401", "401 (WWW-Authenticate) or 407 (Proxy-Authenticate) for digest challenges", integer(&c.SIP.ChallengeStatus)},
		{"sip.digest_algorithms", "", "SWITCHBOARD_SIP_DIGEST_ALGORITHMS", "SHA-256,MD5", "digest challenges offered, in order (RFC 8760); set MD5 for peers that read only the first challenge", list(&c.SIP.DigestAlgorithms)},
		{"sip.nonce_ttl", "", "SWITCHBOARD_SIP_NONCE_TTL", "30s", "lifetime of a digest nonce; older ones are answered stale=true", duration(&c.SIP.NonceTTL)},
		{"sip.max_calls", "max-calls", "SWITCHBOARD_MAX_CALLS", "500", "concurrent calls; INVITEs beyond get 503 with Retry-After", integer(&c.SIP.MaxCalls)},
		{"sip.drain_timeout", "", "SWITCHBOARD_DRAIN_TIMEOUT", "30s", "on SIGTERM, how long calls in progress may go on before BYE", duration(&c.SIP.DrainTimeout)},
		{"sip.auth_fail_limit", "", "SWITCHBOARD_SIP_AUTH_FAIL_LIMIT", "10", "failed digest answers from one source address before it is blocked", integer(&c.SIP.AuthFailLimit)},
		{"sip.auth_fail_window", "", "SWITCHBOARD_SIP_AUTH_FAIL_WINDOW", "5m", "window over which failed digest answers are counted, and the block time", duration(&c.SIP.AuthFailWindow)},
		{"sip.source_fail_limit", "", "SWITCHBOARD_SIP_SOURCE_FAIL_LIMIT", "100", "failing requests (malformed, unknown number, refused INVITE, no such dialog) from one source address before it is blocked: it then gets no answer at all", integer(&c.SIP.SourceFailLimit)},
		{"sip.source_fail_window", "", "SWITCHBOARD_SIP_SOURCE_FAIL_WINDOW", "10s", "window over which a source's failing requests are counted", duration(&c.SIP.SourceFailWindow)},
		{"sip.source_block_time", "", "SWITCHBOARD_SIP_SOURCE_BLOCK_TIME", "1m", "how long a blocked source stays blocked (its calls in progress go on)", duration(&c.SIP.SourceBlockTime)},
		{"sip.source_max_connections", "", "SWITCHBOARD_SIP_SOURCE_MAX_CONNECTIONS", "32", "TCP/TLS connections one source address may hold open; more are closed as they are accepted", integer(&c.SIP.SourceMaxConnections)},
		{"sip.min_se", "", "SWITCHBOARD_SIP_MIN_SE", "90s", "smallest session timer interval accepted (RFC 4028 Min-SE); an INVITE asking for less gets 422", duration(&c.SIP.MinSE)},
		{"sip.session_expires", "", "SWITCHBOARD_SIP_SESSION_EXPIRES", "30m", "session timer interval for callers that support timers without asking for one; a call whose peer stops refreshing is hung up", duration(&c.SIP.SessionExpires)},
		{"sip.forward_headers", "", "SWITCHBOARD_SIP_FORWARD_HEADERS", "From,To,Call-ID,X-*,User-to-User,P-Asserted-Identity,P-Preferred-Identity,Remote-Party-ID,Identity,Privacy,History-Info,Diversion,Referred-By,User-Agent", "INVITE headers a call keeps, chosen once at admission (names, or prefixes ending in *): the webhook's sip_headers, the agent's {{sip.NAME}} variables and the call record see only these", list(&c.SIP.ForwardHeaders)},
		{"sip.trunk_prefix", "", "SWITCHBOARD_SIP_TRUNK_PREFIX", "", "digits a trunk puts before national numbers (e.g. 0 or 1) to strip before matching", str(&c.SIP.TrunkPrefix)},
		{"sip.default_country", "", "SWITCHBOARD_SIP_DEFAULT_COUNTRY", "US", "ISO country used to read called numbers that arrive without +", str(&c.SIP.DefaultCountry)},

		{"rtp.ports", "rtp-ports", "SWITCHBOARD_RTP_PORTS", "20000-20999", "UDP port range for RTP (even ports) and RTCP (the next odd port)", ports(&c.RTP.Ports)},
		{"rtp.public_ip", "rtp-public-ip", "SWITCHBOARD_RTP_PUBLIC_IP", "", "address advertised in SDP answers (NAT); defaults to the local address", str(&c.RTP.PublicIP)},
		{"rtp.bind_ip", "", "SWITCHBOARD_RTP_BIND_IP", "", "address RTP sockets bind to; defaults to the host of sip.addr", str(&c.RTP.BindIP)},
		{"rtp.media_timeout", "", "SWITCHBOARD_MEDIA_TIMEOUT", "30s", "no RTP for this long ends the call with BYE", duration(&c.RTP.MediaTimeout)},
		{"rtp.jitter_delay", "", "SWITCHBOARD_JITTER_DELAY", "40ms", "target delay of the jitter buffer", duration(&c.RTP.JitterDelay)},
		{"rtp.relatch_after", "", "SWITCHBOARD_RTP_RELATCH_AFTER", "1500ms", "a call's RTP follows a new source address only after its latched source was silent this long and the new one carries the same SSRC (or a re-INVITE names it); other sources' packets are dropped", duration(&c.RTP.RelatchAfter)},
		{"rtp.srtp", "", "SWITCHBOARD_RTP_SRTP", "optional", "SRTP with SDES keys (RFC 4568): off, optional (when the caller offers it) or required (488 otherwise)", str(&c.RTP.SRTP)},
		{"rtp.srtp_signalling", "", "SWITCHBOARD_RTP_SRTP_SIGNALLING", "tls", "where SDES keys may travel: tls (only SIP over TLS; a crypto offer over UDP/TCP gets 488 or plain RTP) or any (keys readable on the path)", str(&c.RTP.SRTPSignalling)},
		{"health.loss_threshold", "", "SWITCHBOARD_HEALTH_LOSS_THRESHOLD", "0.05", "inbound loss ratio over health.loss_window past which a call is degraded (media_degraded webhook)", float(&c.Health.LossThreshold)},
		{"health.loss_window", "", "SWITCHBOARD_HEALTH_LOSS_WINDOW", "5s", "window the loss ratio of a running call is measured over", duration(&c.Health.LossWindow)},
		{"health.no_audio", "", "SWITCHBOARD_HEALTH_NO_AUDIO", "5s", "no inbound RTP audio for this long makes a call degraded", duration(&c.Health.NoAudio)},
		{"health.one_way", "", "SWITCHBOARD_HEALTH_ONE_WAY", "5s", "one direction missing (no RTP, or only silence while the agent talks) this long flags the call one-way", duration(&c.Health.OneWay)},
		{"health.event_interval", "", "SWITCHBOARD_HEALTH_EVENT_INTERVAL", "5s", "how often a controller gets switchboard.call.media_health", duration(&c.Health.EventInterval)},
		{"recording.dir", "", "SWITCHBOARD_RECORDING_DIR", "", "directory of call recordings; empty: recordings/ in data_dir", str(&c.Recording.Dir)},
		{"recording.retention", "", "SWITCHBOARD_RECORDING_RETENTION", "720h", "recordings older than this are removed; 0 keeps them", duration(&c.Recording.Retention)},
		{"recording.encrypt", "", "SWITCHBOARD_RECORDING_ENCRYPT", "false", "encrypt recordings at rest with the master key (chunked AES-256-GCM; GET decrypts)", boolean(&c.Recording.Encrypt)},

		{"webrtc.ports", "webrtc-ports", "SWITCHBOARD_WEBRTC_PORTS", "21000-21999", "UDP port range of browser calls (ICE, DTLS-SRTP, the data channel)", ports(&c.WebRTC.Ports)},
		{"webrtc.public_ip", "webrtc-public-ip", "SWITCHBOARD_WEBRTC_PUBLIC_IP", "", "address advertised in browser calls' ICE candidates behind a 1:1 NAT; defaults to the local address", str(&c.WebRTC.PublicIP)},
		{"webrtc.bind_ip", "", "SWITCHBOARD_WEBRTC_BIND_IP", "", "address browser calls' ICE host candidates use; defaults to rtp.bind_ip (every address when that is a wildcard)", str(&c.WebRTC.BindIP)},
		{"webrtc.connect_timeout", "", "SWITCHBOARD_WEBRTC_CONNECT_TIMEOUT", "10s", "how long a browser has to connect (ICE, DTLS) after the SDP answer", duration(&c.WebRTC.ConnectTimeout)},

		{"answer_timeout", "", "SWITCHBOARD_ANSWER_TIMEOUT", "5s", "longest ringing while an agent's model session gets ready; then the agent's fallback applies", duration(&c.AnswerTimeout)},
		{"upstream.url", "upstream-url", "SWITCHBOARD_UPSTREAM_URL", "", "realtime provider WebSocket URL (wss://…/v1/realtime) for agents with engine upstream; empty: none", str(&c.Upstream.URL)},
		{"upstream.model", "", "SWITCHBOARD_UPSTREAM_MODEL", "", "model query parameter sent upstream; empty: the agent's model", str(&c.Upstream.Model)},
		{"upstream.api_key_env", "", "SWITCHBOARD_UPSTREAM_API_KEY_ENV", "SWITCHBOARD_UPSTREAM_API_KEY", "name of the environment variable holding the provider's bearer key", str(&c.Upstream.APIKeyEnv)},
		{"upstream.audio_format", "", "SWITCHBOARD_UPSTREAM_AUDIO_FORMAT", "pcm", "audio with the provider: pcm (PCM16 24 kHz, resampled) or pcmu / pcma (G.711 8 kHz, no resampling)", str(&c.Upstream.AudioFormat)},
		{"upstream.session_fields", "", "SWITCHBOARD_UPSTREAM_SESSION_FIELDS", "nested", "where the provider takes a session's voice and turn detection: nested (audio.output.voice, audio.input.turn_detection: the OpenAI GA API) or top_level (voice, turn_detection: as the spec places them); clients may use either", str(&c.Upstream.SessionFields)},
		{"upstream.connect_timeout", "", "SWITCHBOARD_UPSTREAM_CONNECT_TIMEOUT", "5s", "WebSocket connect timeout to the provider", duration(&c.Upstream.ConnectTimeout)},
		{"upstream.reconnect_timeout", "", "SWITCHBOARD_UPSTREAM_RECONNECT_TIMEOUT", "700ms", "how long a call whose provider session dropped waits, silent, for a new one; then the caller hears the apology (the agent's fallback)", duration(&c.Upstream.ReconnectTimeout)},
		{"speech.tts_engine", "", "SWITCHBOARD_TTS_ENGINE", "espeak", "text to speech: espeak (local espeak-ng) or upstream", str(&c.Speech.TTSEngine)},
		{"speech.stt_engine", "", "SWITCHBOARD_STT_ENGINE", "pocketsphinx", "speech to text: pocketsphinx (local, English), upstream, or none (/v1/stt answers 503)", str(&c.Speech.STTEngine)},
		{"speech.stt_fallback_priority", "", "SWITCHBOARD_STT_FALLBACK_PRIORITY", "idle", "how the local STT engine's decoders of the agents' transcript fallback are scheduled: idle (SCHED_IDLE: only CPU nothing else wants; on a busy machine transcripts wait), nice (10 nice steps below the appliance: a share of a busy machine, at some cost to the calls' frame timing) or normal", str(&c.Speech.STTFallbackPriority)},
		{"speech.upstream_url", "", "SWITCHBOARD_SPEECH_UPSTREAM_URL", "", "provider base URL (https://…) for the upstream TTS/STT engines", str(&c.Speech.UpstreamURL)},
		{"dtmf.idle_timeout", "", "SWITCHBOARD_DTMF_IDLE_TIMEOUT", "2500ms", "keys a caller typed go to the model after this long without another (# and the caller speaking send them at once)", duration(&c.DTMF.IdleTimeout)},
		{"echo.vad_threshold", "", "SWITCHBOARD_ECHO_VAD_THRESHOLD", "0.5", "echo engine's VAD threshold, 0..1 (0.5 is about -40 dBFS)", float(&c.Echo.VADThreshold)},
		{"echo.silence_duration", "", "SWITCHBOARD_ECHO_SILENCE", "500ms", "silence that ends a caller's turn in the echo engine", duration(&c.Echo.SilenceDuration)},
		{"echo.max_turn", "", "SWITCHBOARD_ECHO_MAX_TURN", "10s", "the most of a caller's turn the echo engine keeps and repeats (its last part, at telephone quality: 8 kHz µ-law, 8 KB a second), so a session's memory stays bounded", duration(&c.Echo.MaxTurn)},
		{"control.ring_timeout", "", "SWITCHBOARD_RING_TIMEOUT", "20s", "how long a call to a webhook-routed number rings waiting for a controller on /v1/realtime?call_id=; then 480", duration(&c.Control.RingTimeout)},
		{"control.controller_grace", "", "SWITCHBOARD_CONTROLLER_GRACE", "30s", "how long a webhook-routed call goes on with its last configuration after its controller dropped", duration(&c.Control.Grace)},
		{"control.engine", "", "SWITCHBOARD_CONTROL_ENGINE", "", "realtime engine of webhook-routed calls and of /v1/realtime sessions: echo or upstream; empty: upstream when upstream.url is set, else echo", str(&c.Control.Engine)},
		{"outbound.max_concurrent", "", "SWITCHBOARD_OUTBOUND_MAX_CONCURRENT", "10", "calls a team may have placed (POST /v1/calls) and in progress at once; more get 429 with Retry-After", integer(&c.Outbound.MaxConcurrent)},
		{"outbound.calls_per_second", "", "SWITCHBOARD_OUTBOUND_CALLS_PER_SECOND", "2", "calls a team may place per second; more get 429 with Retry-After", integer(&c.Outbound.CallsPerSecond)},
		{"outbound.ring_timeout", "", "SWITCHBOARD_OUTBOUND_RING_TIMEOUT", "30s", "how long a placed call rings before it is cancelled as no-answer, when the request gives no ring_timeout_s (5s to 120s)", duration(&c.Outbound.RingTimeout)},
		{"registration.sync_interval", "", "SWITCHBOARD_REGISTRATION_SYNC_INTERVAL", "5s", "how often a node reads the numbers' registrations (a change made through this node is read at once) and renews the leases of those it registers", duration(&c.Registration.SyncInterval)},
		{"registration.lease_ttl", "", "SWITCHBOARD_REGISTRATION_LEASE_TTL", "20s", "how long a node holds a registration without renewing it (at least two syncs): in a fleet, another node takes it over after that when the node died", duration(&c.Registration.LeaseTTL)},
		{"registration.retry_min", "", "SWITCHBOARD_REGISTRATION_RETRY_MIN", "5s", "wait after a failed REGISTER, doubled after each further failure (give or take a tenth)", duration(&c.Registration.RetryMin)},
		{"registration.retry_max", "", "SWITCHBOARD_REGISTRATION_RETRY_MAX", "5m", "the longest wait between two failed REGISTERs", duration(&c.Registration.RetryMax)},
		{"registration.refresh_before", "", "SWITCHBOARD_REGISTRATION_REFRESH_BEFORE", "30s", "a registration is refreshed this long before the registrar's expiry (at the latest half way through it)", duration(&c.Registration.RefreshBefore)},
		{"registration.keepalive", "", "SWITCHBOARD_REGISTRATION_KEEPALIVE", "25s", "how often the path to a registrar is pinged between refreshes, to hold a NAT's binding open (CRLF over UDP, OPTIONS over TCP and TLS); 0: never", duration(&c.Registration.KeepAlive)},
		{"registration.timeout", "", "SWITCHBOARD_REGISTRATION_TIMEOUT", "32s", "how long one REGISTER exchange (with its challenge) may take, and each unregister at shutdown", duration(&c.Registration.Timeout)},
		{"streams.connect_timeout", "", "SWITCHBOARD_STREAMS_CONNECT_TIMEOUT", "5s", "how long a stream-routed call waits for its bot's WebSocket upgrade (or AudioSocket connection); then the fallback agent takes the call, or the caller hears an error tone", duration(&c.Streams.ConnectTimeout)},
		{"streams.write_timeout", "", "SWITCHBOARD_STREAMS_WRITE_TIMEOUT", "5s", "longest write to a bot's stream; a bot that does not read for this long ends its stream", duration(&c.Streams.WriteTimeout)},
		{"streams.max_queue", "", "SWITCHBOARD_STREAMS_MAX_QUEUE", "30s", "most of a bot's audio queued for its caller: a bot that sends faster than real time for longer loses its oldest audio (counted)", duration(&c.Streams.MaxQueue)},
		{"transfer.ring_timeout", "", "SWITCHBOARD_TRANSFER_RING_TIMEOUT", "30s", "how long the human's phone rings in a transfer (bridge, warm, refer with replaces, auto) when the request gives no timeout_s (5s to 120s); then no_answer", duration(&c.Transfer.RingTimeout)},
		{"transfer.accept_timeout", "", "SWITCHBOARD_TRANSFER_ACCEPT_TIMEOUT", "20s", "how long the human of a warm transfer has to press 1 once the briefing ended; then no_answer and the caller is back with the agent", duration(&c.Transfer.AcceptTimeout)},
		{"transfer.refer_notify_timeout", "", "SWITCHBOARD_TRANSFER_REFER_NOTIFY_TIMEOUT", "4s", "mode auto: how long after the caller's side accepted the REFER the first NOTIFY may take; without one the REFER went nowhere and the caller is bridged instead", duration(&c.Transfer.ReferNotifyTimeout)},
		{"transfer.hold_audio", "", "SWITCHBOARD_TRANSFER_HOLD_AUDIO", "music", "what a held or transferred caller hears when the request names nothing: music (synthesized), silence, a WAV file under transfer.audio_dir, or a prompt spoken with the TTS engine", str(&c.Transfer.HoldAudio)},
		{"transfer.audio_dir", "", "SWITCHBOARD_TRANSFER_AUDIO_DIR", "", "directory hold_audio WAV files are read from (names relative to it); empty: audio/ in data_dir", str(&c.Transfer.AudioDir)},
		{"numbers.pool", "", "SWITCHBOARD_NUMBER_POOL", "+14155550100,+14155550101,+12125550100", "comma-separated E.164 DIDs that svc_provisioned numbers are allocated from", list(&c.Numbers.Pool)},

		{"", "", "SWITCHBOARD_SECRET_KEY", "", "AES-256 master key (64 hex or 44 base64 characters) for secrets at rest; default: a 0600 key file in data_dir", str(&c.Keys.SecretKey)},
		{"", "", "SWITCHBOARD_TOOLS_SECRET", "", "Standard Webhooks secret (whsec_…) signing custom tool calls; default: tools.secret (0600) made in data_dir", str(&c.ToolsSecret)},
		{"", "", "SWITCHBOARD_ADMIN_KEY", "", "owner key to use instead of a generated one on first start", str(&c.Keys.AdminKey)},
		{"webhooks.allow_addresses", "", "SWITCHBOARD_WEBHOOKS_ALLOW_ADDRESSES", "", "comma-separated CIDRs that webhook, OAuth and tool URLs may reach although link-local or cloud metadata addresses (169.254.0.0/16, fe80::/10, 100.100.100.200, fd00:ec2::254, …), refused by default; loopback and private networks are always allowed", list(&c.Webhooks.AllowAddresses)},
		{"records.alive_interval", "", "SWITCHBOARD_RECORDS_ALIVE_INTERVAL", "10s", "how often the stored records of calls in progress are marked alive; after a crash they are closed at their last mark (ended_by crash)", duration(&c.Records.AliveInterval)},
		{"records.batch_interval", "", "SWITCHBOARD_RECORDS_BATCH_INTERVAL", "5ms", "least time between two transactions of call records (0 to 50ms): under load the changes of the calls within it (admission, answer, end) commit together; a record waits at most this long plus the transaction in progress, and a call's admission and end wait for their commit", duration(&c.Records.BatchInterval)},
		{"keys.default_qps", "", "SWITCHBOARD_KEYS_DEFAULT_QPS", "50", "requests per second allowed to every API key that sets no qps of its own, the owner key included (429 with Retry-After past it); 0: unlimited", integer(&c.Keys.DefaultQPS)},
		{"keys.default_qpm", "", "SWITCHBOARD_KEYS_DEFAULT_QPM", "1500", "requests per minute allowed to every API key that sets no qpm of its own, the owner key included; 0: unlimited", integer(&c.Keys.DefaultQPM)},
		{"keys.auth_fail_limit", "", "SWITCHBOARD_KEYS_AUTH_FAIL_LIMIT", "100", "requests with an API key that does not authenticate (unknown, disabled, expired) one address may make within keys.auth_fail_window; past it the address gets 429 until the window ends; 0: off", integer(&c.Keys.AuthFailLimit)},
		{"keys.auth_fail_window", "", "SWITCHBOARD_KEYS_AUTH_FAIL_WINDOW", "10s", "window over which failed API authentications are counted, and the block time", duration(&c.Keys.AuthFailWindow)},
		{"keys.rotation_grace", "", "SWITCHBOARD_ROTATION_GRACE", "24h", "default validity of an old secret after rotation (at most 168h)", duration(&c.Keys.RotationGrace)},
	}
}

// Settings lists every setting with its default, for documentation.
func Settings() []Setting { return settings(&Config{}) }

// Markdown renders the settings table that docs/configuration.md carries.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| YAML key | flag | environment | default | what it does |\n|---|---|---|---|---|\n")
	for _, s := range Settings() {
		fl := ""
		if s.Flag != "" {
			fl = "`--" + s.Flag + "`"
		}
		def := s.Default
		if def != "" {
			def = "`" + def + "`"
		}
		key := "(environment only)"
		if s.Key != "" {
			key = "`" + s.Key + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", key, fl, s.Env, def, s.Help)
	}
	return b.String()
}
