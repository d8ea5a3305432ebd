package app

import (
	"context"

	"switchboard/config"
	"switchboard/registration"
	"switchboard/sip"
)

var _ registration.Line = (*sip.Registration)(nil)

// sipRegistrar makes the registration manager's lines on the SIP server.
type sipRegistrar struct{ srv *sip.Server }

// NewLine prepares a registration of b on the server.
func (r sipRegistrar) NewLine(b sip.Binding) (registration.Line, error) {
	reg, err := r.srv.NewRegistration(b)
	if err != nil {
		return nil, err
	}
	return reg, nil
}

// buildRegistrations makes the manager of the numbers' outbound
// registrations (after the SIP server, which sends the REGISTERs).
func (a *App) buildRegistrations(cfg *config.Config) error {
	var err error
	a.registrations, err = registration.New(registration.Options{
		NodeID: a.nodeID, Numbers: a.numbers, Registrar: sipRegistrar{a.sip}, Store: a.st.Registrations(), Webhooks: a.webhooks,
		Metrics: registration.NewMetrics(a.metrics), Log: a.log.With().Str("component", "registration").Logger(),
		SyncInterval: cfg.Registration.SyncInterval, LeaseTTL: cfg.Registration.LeaseTTL,
		RetryMin: cfg.Registration.RetryMin, RetryMax: cfg.Registration.RetryMax, RefreshBefore: cfg.Registration.RefreshBefore,
		KeepAlive: cfg.Registration.KeepAlive, Timeout: cfg.Registration.Timeout, Changes: a.registrationChanges,
	})
	return err
}

// runRegistrations keeps the registrations until stop is called, which
// unregisters them (the first step of the drain: the registrars stop
// sending new calls here) and returns when that is done.
func (a *App) runRegistrations() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.registrations.Run(ctx) }()
	return func() { cancel(); <-done }
}
