package app

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"switchboard/agent"
	"switchboard/api"
	"switchboard/auth"
	"switchboard/call"
	"switchboard/cluster"
	"switchboard/config"
	"switchboard/console"
	"switchboard/control"
	"switchboard/conversation"
	"switchboard/media"
	"switchboard/numbers"
	"switchboard/outbound"
	"switchboard/recording"
	"switchboard/records"
	"switchboard/registration"
	"switchboard/rtc"
	"switchboard/sip"
	"switchboard/sipleg"
	"switchboard/speech"
	"switchboard/store"
	"switchboard/transfer"
	"switchboard/usage"
	"switchboard/webhook"
)

// App is one running appliance.
type App struct {
	cfg      *config.Config
	log      zerolog.Logger
	st       *store.DB
	box      *auth.Box
	keys     *auth.KeyService
	reg      *prometheus.Registry
	api      *api.Server
	numbers  *numbers.Service
	agents   *agent.Service
	runtime  *conversation.Runtime
	routed   *conversation.Registry
	speech   *speech.Service
	greeter  *greeter
	callLog  *records.Service
	recorder *records.Recorder
	// metrics registers with reg and remembers the names.
	metrics *namingRegisterer
	// recordings owns the recordings directory.
	recordings *recording.Service
	cluster    *cluster.Service
	nodeID     string
	usage      *usage.Service
	ports      *media.PortPool
	calls      *call.Manager
	phones     *sipleg.Handler
	dialer     *legDialer
	transfers  *transfer.Service
	outbound   *outbound.Service
	control    *control.Service
	browsers   *rtc.Server
	webhooks   *webhook.Dispatcher
	tools      *webhook.ToolClient
	sip        *sip.Server
	httpLn     net.Listener
	pprofLn    net.Listener // nil: profiler off
	httpSrv    *http.Server
	certs      *api.CertReloader
	draining   atomic.Bool
	// OwnerKeyFile is where a generated owner key was written on this start
	// (empty when none was generated).
	OwnerKeyFile string

	// registrations keeps the numbers' outbound registrations; numbers
	// wake it through registrationChanges.
	registrations       *registration.Manager
	registrationChanges chan struct{}
}

// New opens the store and the secret box, bootstraps the owner key and
// builds the HTTP API. It binds the HTTP listener, so HTTPAddr is known
// before Run.
func New(ctx context.Context, cfg *config.Config, log zerolog.Logger) (_ *App, err error) {
	a := &App{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if a.nodeID, err = nodeID(cfg); err != nil {
		return nil, err
	}
	// The data directory holds the key files even when the store is not
	// SQLite in it.
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if a.st, err = store.Open(ctx, cfg.DatabaseURL, cfg.DataDir); err != nil {
		return nil, err
	}
	if cfg.Fleet() {
		if err := cluster.CheckIDFree(ctx, a.st.Nodes(), a.nodeID, cfg.Cluster.NodeTimeout, time.Now()); err != nil {
			return nil, err
		}
	}
	// Calls a crash of this node cut are stored open: close them before
	// taking calls.
	n, err := records.CloseCrashed(ctx, a.st.Calls(), a.nodeID)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		log.Warn().Int("calls", n).Msg("closed the call records a crash left open (ended_by crash)")
	}
	// The outbound slots of those calls too (the fleet's limits count them).
	if _, err := a.st.Outbound().ReleaseNode(ctx, a.nodeID); err != nil {
		return nil, err
	}
	box, created, err := auth.LoadOrCreateMasterKey(cfg.DataDir, cfg.Keys.SecretKey)
	if err != nil {
		return nil, err
	}
	a.box = box
	if created {
		log.Info().Str("path", cfg.DataDir+"/"+auth.MasterKeyFile).Msg("created the master key for secrets at rest")
	}
	if cfg.HTTP.TLSCert != "" {
		if a.certs, err = api.NewCertReloader(cfg.HTTP.TLSCert, cfg.HTTP.TLSKey, log); err != nil {
			return nil, err
		}
	}
	a.httpLn, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("http listen: %w", err)
	}
	if a.pprofLn, err = listenPprof(cfg.PprofAddr); err != nil {
		return nil, fmt.Errorf("pprof listen: %w", err)
	}
	if err := a.buildCluster(cfg); err != nil {
		return nil, err
	}
	keyOpts := []auth.KeyOption{auth.WithRotationGrace(cfg.Keys.RotationGrace), auth.WithNodeAddress(a.httpLn.Addr().String()),
		auth.WithDefaultLimits(cfg.Keys.DefaultQPS, cfg.Keys.DefaultQPM)}
	if a.cluster != nil {
		keyOpts = append(keyOpts, auth.WithFleet(a.cluster))
	}
	a.keys = auth.NewKeyService(a.st, keyOpts...)
	if a.OwnerKeyFile, err = a.keys.Bootstrap(ctx, cfg.DataDir, cfg.TeamID, cfg.Keys.AdminKey); err != nil {
		return nil, fmt.Errorf("bootstrap owner key: %w", err)
	}
	if a.OwnerKeyFile != "" {
		log.Warn().Str("path", a.OwnerKeyFile).Msg("first start: created the owner key (management + wildcard API key); keep this file safe")
	}
	a.metrics = &namingRegisterer{Registerer: a.reg, names: map[string]bool{}}
	a.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := a.buildCalls(cfg, log); err != nil {
		return nil, err
	}
	a.usage = usage.NewService(a.st.Usage(), usage.Options{})
	modules := []api.Module{a.keys, a.numbers, a.agents, a.speech, a.callLog, a.outbound, a.control, a.usage, console.New()}
	if a.cluster != nil {
		modules = append(modules, a.cluster)
	}
	a.api = api.New(log, a.keys, modules,
		api.WithAuthFailLimit(cfg.Keys.AuthFailLimit, cfg.Keys.AuthFailWindow),
		api.WithMetrics(a.reg),
		api.WithReadyCheck(func(ctx context.Context) error { return a.st.Ping(ctx) }),
		api.WithReadyCheck(func(context.Context) error {
			if a.draining.Load() {
				return errors.New("draining")
			}
			return nil
		}),
	)
	a.httpSrv = &http.Server{
		Handler:           a.api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          stdlog.New(serverLog{log}, "", 0),
		BaseContext:       func(net.Listener) context.Context { return log.WithContext(context.Background()) },
	}
	if a.certs != nil {
		a.httpSrv.TLSConfig = a.certs.TLSConfig()
	}
	// Streams (the live calls) end when the server stops, rather than
	// hold its graceful shutdown for its whole timeout.
	a.httpSrv.RegisterOnShutdown(func() { _ = a.callLog.Close() })
	return a, nil
}

// HTTPAddr is the address the HTTP API listens on.
func (a *App) HTTPAddr() string { return a.httpLn.Addr().String() }

// URL is the base URL of the HTTP API: https:// when a certificate is set.
func (a *App) URL() string {
	if a.certs != nil {
		return "https://" + a.HTTPAddr()
	}
	return "http://" + a.HTTPAddr()
}

// ReloadTLS reads the HTTP API's certificate and key files again (SIGHUP);
// on failure the certificate in service stays. Without TLS it does nothing.
func (a *App) ReloadTLS() error {
	if a.certs == nil {
		return nil
	}
	return a.certs.Reload()
}

// Store is the appliance's store (tests).
func (a *App) Store() store.Store { return a.st }

// Run serves until ctx is done, then stops gracefully.
func (a *App) Run(ctx context.Context) error {
	stopCluster, err := a.runCluster(ctx)
	if err != nil {
		return errors.Join(err, a.Close())
	}
	errc := make(chan error, 2)
	go func() {
		if a.certs != nil {
			errc <- a.httpSrv.ServeTLS(a.httpLn, "", "")
			return
		}
		errc <- a.httpSrv.Serve(a.httpLn)
	}()
	sipCtx, stopSIP := context.WithCancel(context.Background())
	defer stopSIP()
	sipDone := make(chan error, 1)
	go func() { sipDone <- a.sip.Serve(sipCtx) }()
	stopRegistrations := a.runRegistrations()
	if a.pprofLn != nil {
		pctx, stopPprof := context.WithCancel(context.Background())
		pdone := make(chan struct{})
		go func() {
			defer close(pdone)
			if err := servePprof(pctx, a.pprofLn); err != nil {
				a.log.Warn().Err(err).Msg("pprof listener stopped")
			}
		}()
		defer func() { stopPprof(); <-pdone }()
		a.log.Info().Str("pprof_addr", a.pprofLn.Addr().String()).Msg("profiler listening (loopback only)")
	}
	recCtx, stopRecorder := context.WithCancel(context.Background())
	recDone := make(chan struct{})
	go func() { defer close(recDone); a.recorder.Run(recCtx) }()
	go a.recordings.Run(sipCtx)
	a.log.Info().Str("http_addr", a.HTTPAddr()).Str("http_url", a.URL()).Str("sip_addr", a.SIPAddr().String()).Str("data_dir", a.cfg.DataDir).
		Str("node_id", a.nodeID).Str("store", a.st.Dialect()).Msg("switchboard is serving")
	select {
	case <-ctx.Done():
	case err = <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	case err = <-sipDone:
		sipDone <- err
	}
	// Drain: new INVITEs get 503, calls in progress may finish within the
	// drain time, then they get BYE.
	a.draining.Store(true)
	a.drainCluster()
	// Registrars stop sending calls here first (unregister), while the
	// SIP server still serves.
	stopRegistrations()
	a.log.Info().Int("active_calls", a.calls.Active()).Dur("drain_timeout", a.cfg.SIP.DrainTimeout).Msg("draining")
	a.sip.Shutdown(context.Background())
	stopSIP()
	_ = a.browsers.Close() // browser calls end with the appliance
	if serr := <-sipDone; serr != nil {
		err = errors.Join(err, serr)
	}
	a.calls.Wait()
	stopRecorder()
	<-recDone
	a.recordings.Wait()
	stopCluster()
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if serr := a.httpSrv.Shutdown(sctx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	a.log.Info().Msg("switchboard stopped")
	return errors.Join(err, a.Close())
}

// Close releases the store and the listener; it is safe to call twice.
func (a *App) Close() error {
	var errs []error
	if a.httpLn != nil {
		if err := a.httpLn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if a.pprofLn != nil {
		if err := a.pprofLn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if a.sip != nil {
		errs = append(errs, a.sip.Close())
	}
	if a.greeter != nil {
		a.greeter.Close()
	}
	if a.speech != nil {
		errs = append(errs, a.speech.Close())
	}
	if a.browsers != nil {
		errs = append(errs, a.browsers.Close())
	}
	if a.control != nil {
		errs = append(errs, a.control.Close())
		a.routed.Wait()
	}
	if a.webhooks != nil {
		errs = append(errs, a.webhooks.Close())
	}
	if a.tools != nil {
		errs = append(errs, a.tools.Close())
	}
	if a.ports != nil {
		errs = append(errs, a.ports.Close())
	}
	if a.st != nil {
		errs = append(errs, a.st.Close())
	}
	return errors.Join(errs...)
}
