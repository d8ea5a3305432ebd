package app

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/auth"
	"switchboard/call"
	"switchboard/config"
	"switchboard/control"
	"switchboard/conversation"
	"switchboard/media"
	"switchboard/numbers"
	"switchboard/outbound"
	"switchboard/realtime"
	"switchboard/realtime/echo"
	"switchboard/records"
	"switchboard/rtc"
	"switchboard/sip"
	"switchboard/sipleg"
	"switchboard/stream"
	"switchboard/webhook"
)

// buildCalls wires numbers, agents, the RTP port pool, the call manager
// and the SIP server.
func (a *App) buildCalls(cfg *config.Config, log zerolog.Logger) error {
	sipHost := cfg.SIP.PublicAddr
	if sipHost == "" {
		sipHost = cfg.SIP.Addr
	}
	if cfg.Cluster.SIPHost != "" {
		sipHost = cfg.Cluster.SIPHost // the nodes of a fleet take calls through Kamailio
	}
	addrs, err := webhook.ParseAddressPolicy(cfg.Webhooks.AllowAddresses)
	if err != nil {
		return fmt.Errorf("webhooks.allow_addresses: %w", err)
	}
	a.registrationChanges = make(chan struct{}, 1)
	a.numbers = numbers.NewService(a.st, numbers.Options{SIPHost: sipHost, Pool: cfg.Numbers.Pool, Sealer: a.box, NewWebhookSecret: auth.NewWebhookSecret, Log: log,
		Addresses: addrs, RegistrationChanges: a.registrationChanges})
	a.agents = agent.NewService(a.st, agent.Options{OnSave: func(c *agent.Config) { a.warmPrompts(c) }, Addresses: addrs})

	bindIP, err := rtpBindIP(cfg)
	if err != nil {
		return err
	}
	if a.ports, err = media.NewPortPool(bindIP, cfg.RTP.Ports.Min, cfg.RTP.Ports.Max); err != nil {
		return fmt.Errorf("rtp ports: %w", err)
	}
	metrics := call.NewMetrics(a.metrics)
	if a.speech, err = buildSpeech(cfg, log); err != nil {
		return err
	}
	engines, err := buildEngines(cfg, echoVoices{a.speech}, log)
	if err != nil {
		return err
	}
	a.greeter = newGreeter(a.speech, log)
	if err := a.buildTransfers(cfg, addrs); err != nil {
		return err
	}
	secret, created, err := loadToolSecret(cfg.DataDir, cfg.ToolsSecret)
	if err != nil {
		return err
	}
	if created {
		log.Info().Str("path", cfg.DataDir+"/"+ToolSecretFile).Msg("created the secret that signs custom tool calls (Standard Webhooks)")
	}
	if a.tools, err = webhook.NewToolClient(secret, webhook.WithToolAddresses(addrs)); err != nil {
		return err
	}
	tools := a.tools
	var stt conversation.Transcriber
	if a.speech.HasSTT() {
		stt = sttFallback{a.speech}
	}
	streams := stream.NewService(stream.Options{ConnectTimeout: cfg.Streams.ConnectTimeout, WriteTimeout: cfg.Streams.WriteTimeout,
		MaxQueue: cfg.Streams.MaxQueue, Addresses: addrs, Metrics: stream.NewMetrics(a.metrics)})
	a.runtime = conversation.NewRuntime(a.agents, conversation.RuntimeOptions{Metrics: conversation.NewMetrics(a.metrics), Engines: engines, Greeter: a.greeter, Tools: toolCaller{tools},
		Contexts: tools, Transcriber: stt, AnswerTimeout: cfg.AnswerTimeout, DTMFIdle: cfg.DTMF.IdleTimeout, ReconnectTimeout: cfg.Upstream.ReconnectTimeout, UpstreamFormat: "audio/" + cfg.Upstream.AudioFormat,
		Streams: streams, Transfers: a.transfers})
	a.webhooks = webhook.NewDispatcher(webhook.Options{Addresses: addrs, Metrics: webhook.NewMetrics(a.metrics)}, log.With().Str("component", "webhook").Logger())
	a.routed = conversation.NewRegistry()
	router, err := conversation.NewRouter(a.runtime, a.webhooks, a.routed, conversation.ControlledOptions{
		Engine: cfg.Control.Engine, RingTimeout: cfg.Control.RingTimeout, Grace: cfg.Control.Grace, HealthInterval: cfg.Health.EventInterval})
	if err != nil {
		return err
	}
	a.recorder = records.NewRecorder(a.st, records.RecorderOptions{DefaultTeam: cfg.TeamID, AliveInterval: cfg.Records.AliveInterval,
		BatchInterval: cfg.Records.BatchInterval, NodeID: a.nodeID, Log: log.With().Str("component", "records").Logger(), Metrics: records.NewMetrics(a.metrics)})
	if err := a.buildRecordings(cfg, log); err != nil {
		return fmt.Errorf("recordings: %w", err)
	}
	a.calls, err = call.NewManager(call.Options{
		Router: router, Metrics: metrics, Journal: a.recorder,
		Health: call.HealthOptions{LossThreshold: cfg.Health.LossThreshold, LossWindow: cfg.Health.LossWindow,
			NoAudio: cfg.Health.NoAudio, OneWay: cfg.Health.OneWay},
		Recorder: a.recordings,
	}, log)
	if err != nil {
		return err
	}
	if a.phones, err = sipleg.NewHandler(a.calls, sipleg.Options{BindIP: bindIP, Ports: a.ports, JitterDelay: cfg.RTP.JitterDelay,
		MediaTimeout: cfg.RTP.MediaTimeout, RelatchAfter: cfg.RTP.RelatchAfter, Strangers: metrics.Strangers()}); err != nil {
		return err
	}
	if a.browsers, err = buildBrowsers(cfg, bindIP, a.calls, a.routed, rtc.NewMetrics(a.reg), log); err != nil {
		return err
	}
	var remote control.Forwarder
	if a.cluster != nil {
		remote = a.cluster
	}
	a.control, err = control.NewService(control.Options{Calls: control.FromRegistry(a.routed), Records: a.st.Calls(), Keys: a.keys,
		Secrets: auth.NewClientSecrets(a.st, nil).WithTokenMeter(a.keys.Tokens()), Tokens: a.keys.Tokens(),
		Engines: engines, Engine: cfg.Control.Engine, Remote: remote, Browsers: a.browsers, Agents: a.agents,
		Numbers: browserNumbers{st: a.st.Numbers(), sip: sipNumbers{a.numbers}}, Live: a.calls, Supervisors: a.browsers, Addresses: addrs, Log: log})
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	var remoteCalls records.Fleet
	if a.cluster != nil {
		remoteCalls = a.cluster
	}
	a.callLog = records.NewService(a.st, a.recorder, records.Options{DefaultTeam: cfg.TeamID, NodeID: a.nodeID,
		Recordings: recordingFiles{a.recordings}, Remote: remoteCalls, InProgress: a.calls})
	var publicIP netip.Addr
	if cfg.RTP.PublicIP != "" {
		publicIP = netip.MustParseAddr(cfg.RTP.PublicIP)
	}
	// sipgo has one process-wide logger: the first appliance of the
	// process sets it (tests start several side by side).
	libLoggerOnce.Do(func() { sip.SetLibraryLogger(log) })
	a.sip, err = sip.NewServer(sip.Options{
		Addr: cfg.SIP.Addr, PublicAddr: cfg.SIP.PublicAddr, TLSAddr: cfg.SIP.TLSAddr, TLSCert: cfg.SIP.TLSCert, TLSKey: cfg.SIP.TLSKey, TLSCA: cfg.SIP.TLSCA,
		RTPPublicIP: publicIP, SRTP: sip.SRTPPolicy(cfg.RTP.SRTP), SRTPOverPlain: cfg.RTP.SRTPSignalling == "any",
		ChallengeStatus: cfg.SIP.ChallengeStatus, DigestAlgorithms: cfg.SIP.DigestAlgorithms, NonceTTL: cfg.SIP.NonceTTL,
		AuthFailLimit: cfg.SIP.AuthFailLimit, AuthFailWindow: cfg.SIP.AuthFailWindow, MaxCalls: cfg.SIP.MaxCalls,
		SourceFailLimit: cfg.SIP.SourceFailLimit, SourceFailWindow: cfg.SIP.SourceFailWindow, SourceBlockTime: cfg.SIP.SourceBlockTime,
		SourceMaxConnections: cfg.SIP.SourceMaxConnections, MinSE: cfg.SIP.MinSE, SessionExpires: cfg.SIP.SessionExpires,
		DrainTimeout: cfg.SIP.DrainTimeout, TrunkPrefix: cfg.SIP.TrunkPrefix, DefaultCountry: cfg.SIP.DefaultCountry,
		ForwardHeaders: cfg.SIP.ForwardHeaders,
	}, sipNumbers{a.numbers}, a.phones, log, sip.WithMetrics(metrics))
	if err != nil {
		return fmt.Errorf("sip: %w", err)
	}
	a.registerFloodMetrics()
	if err := a.buildRegistrations(cfg); err != nil {
		return fmt.Errorf("registrations: %w", err)
	}
	a.dialer.sip, a.dialer.legs = a.sip, a.phones
	if a.outbound, err = outbound.NewService(outbound.Options{Numbers: originNumbers{a.numbers}, Agents: a.agents, Placer: a.sip,
		Calls: a.phones, Records: func(s call.Snapshot) any { return records.Of(s) }, Slots: a.st.Outbound(), NodeID: a.nodeID,
		MaxConcurrent:  cfg.Outbound.MaxConcurrent,
		CallsPerSecond: cfg.Outbound.CallsPerSecond, RingTimeout: cfg.Outbound.RingTimeout, Addresses: addrs,
		Log: log.With().Str("component", "outbound").Logger()}); err != nil {
		return fmt.Errorf("outbound: %w", err)
	}
	demo, err := a.seedDemo(context.Background(), cfg.DemoNumber, sipHost)
	if err != nil {
		return fmt.Errorf("seed demo number: %w", err)
	}
	if demo != "" {
		log.Info().Str("phone_number", demo).Str("dial", "sip:"+demo+"@"+sipHost).Msg("created the demo number, routed to the demo agent")
	}
	return a.agents.Each(context.Background(), a.warmPrompts)
}

// warmPrompts renders an agent's greeting and prompts into the greeting
// cache at its calls' rates (agent saved, appliance started).
func (a *App) warmPrompts(c *agent.Config) {
	if a.greeter == nil {
		return
	}
	rates := []int{modelRate}
	if a.runtime != nil {
		rates = a.runtime.AudioRates(c)
	}
	a.greeter.Warm(c.Settings.Voice, rates, c.Prompts()...)
}

var libLoggerOnce sync.Once

// modelRate is the audio rate between calls and realtime sessions.
const modelRate = 24000

// buildEngines makes the realtime engines agents choose from: the
// embedded echo engine always (its text answers spoken by voices, in the
// session's voice), the upstream provider when configured.
func buildEngines(cfg *config.Config, voices echo.Synthesizer, log zerolog.Logger) (map[string]realtime.Engine, error) {
	elog := log.With().Str("engine", agent.EngineEcho).Logger()
	engines := map[string]realtime.Engine{
		agent.EngineEcho: echo.New(echo.Options{Synthesizer: voices, Threshold: cfg.Echo.VADThreshold, SilenceDuration: cfg.Echo.SilenceDuration,
			MaxTurn: cfg.Echo.MaxTurn, Logger: &elog}),
	}
	if cfg.Upstream.URL != "" {
		ulog := log.With().Str("engine", agent.EngineUpstream).Logger()
		shape, _ := realtime.ParseSessionShape(cfg.Upstream.SessionFields)
		up, err := realtime.NewUpstream(realtime.Options{URL: cfg.Upstream.URL, Model: cfg.Upstream.Model,
			APIKeyEnv: cfg.Upstream.APIKeyEnv, ConnectTimeout: cfg.Upstream.ConnectTimeout,
			SessionShape: shape, Logger: &ulog})
		if err != nil {
			return nil, fmt.Errorf("upstream: %w", err)
		}
		engines[agent.EngineUpstream] = up
	}
	return engines, nil
}

// rtpBindIP is rtp.bind_ip, else the host of sip.addr (a wildcard host
// binds every address).
func rtpBindIP(cfg *config.Config) (netip.Addr, error) {
	host := cfg.RTP.BindIP
	if host == "" {
		h, _, err := net.SplitHostPort(cfg.SIP.Addr)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("sip.addr: %w", err)
		}
		host = h
	}
	if host == "" {
		return netip.IPv4Unspecified(), nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("rtp bind address %q: %w", host, err)
	}
	return ip, nil
}

// buildBrowsers makes the server of browser calls: ICE on webrtc.bind_ip
// (else the RTP bind address), its port range and public address.
func buildBrowsers(cfg *config.Config, rtpBind netip.Addr, calls *call.Manager, routed *conversation.Registry, metrics *rtc.Metrics, log zerolog.Logger) (*rtc.Server, error) {
	bind := rtpBind
	if cfg.WebRTC.BindIP != "" {
		bind = netip.MustParseAddr(cfg.WebRTC.BindIP)
	}
	var public netip.Addr
	if cfg.WebRTC.PublicIP != "" {
		public = netip.MustParseAddr(cfg.WebRTC.PublicIP)
	}
	s, err := rtc.NewServer(rtc.Options{BindIP: bind, PublicIP: public, PortMin: uint16(cfg.WebRTC.Ports.Min), PortMax: uint16(cfg.WebRTC.Ports.Max),
		ConnectTimeout: cfg.WebRTC.ConnectTimeout, Metrics: metrics}, calls, routed, log.With().Str("component", "webrtc").Logger())
	if err != nil {
		return nil, fmt.Errorf("webrtc: %w", err)
	}
	return s, nil
}

// SIPAddr is the SIP server's UDP address.
func (a *App) SIPAddr() netip.AddrPort { return a.sip.UDPAddr() }

// SIPTLSAddr is the bound SIP over TLS address (invalid without TLS).
func (a *App) SIPTLSAddr() netip.AddrPort { return a.sip.TLSAddr() }

// Calls is the call manager (tests, the calls API).
func (a *App) Calls() *call.Manager { return a.calls }

// Routes lists every HTTP route the appliance serves (tests, docs).
func (a *App) Routes() []httpx.Route { return a.api.Routes() }

// registerFloodMetrics exposes the SIP gate's counters (sip.FloodStats).
func (a *App) registerFloodMetrics() {
	stat := func(f func(sip.FloodStats) float64) func() float64 {
		return func() float64 { return f(a.sip.FloodStats()) }
	}
	a.metrics.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchboard_sip_dropped_total",
			Help: "SIP datagrams and connections dropped unanswered: from blocked sources, or over a source's connection cap."},
			stat(func(s sip.FloodStats) float64 { return float64(s.Dropped) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchboard_sip_malformed_total",
			Help: "SIP messages the parser refused."},
			stat(func(s sip.FloodStats) float64 { return float64(s.Malformed) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchboard_sip_sources_blocked_total",
			Help: "Times a source address was blocked after too many failing requests."},
			stat(func(s sip.FloodStats) float64 { return float64(s.Blocks) })),
	)
}

// RTPPortsInUse is how many RTP port pairs calls hold (tests: nothing
// leaks).
func (a *App) RTPPortsInUse() int { return a.ports.InUse() }
