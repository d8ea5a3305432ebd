package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"

	"switchboard/app"
	"switchboard/config"
)

func init() {
	register("serve", "run the appliance (settings: docs/configuration.md)", serve)
}

// defaultGCPercent is the garbage collector's target (GOGC) when the
// environment sets none: a collection when the heap has grown by 30% of
// what was live after the last one, instead of Go's default of doubling.
// A call's memory is mostly buffers it keeps while it lasts, and its
// per-frame path makes no garbage, so in steady state collections stay
// rare (one in 30 s at 1,000 calls) while the heap's peak per call is
// lower; call setups, which allocate, cost ~8% more CPU than at 50
// (docs/benchmarks.md: memory per call and CPU at GOGC 100, 50, 40, 30
// and 25).
const defaultGCPercent = 30

// gcPercent is the GOGC the appliance runs with: the environment's when
// set (Go's runtime read it at start), else defaultGCPercent.
func gcPercent(getenv func(string) string) (percent int, fromEnv bool) {
	if v := getenv("GOGC"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n, true
		}
		return -1, true // "off"
	}
	return defaultGCPercent, false
}

func serve(env *cliEnv, args []string) error {
	cfg, err := config.Load(args, env.getenv)
	if err != nil {
		return err
	}
	gc, fromEnv := gcPercent(env.getenv)
	if !fromEnv {
		debug.SetGCPercent(gc)
	}
	log := app.NewLogger(os.Stderr, cfg.LogLevel, cfg.LogFormat)
	log.Debug().Int("gc_percent", gc).Bool("from_env", fromEnv).Msg("garbage collector target (GOGC)")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	// SIGHUP reloads the HTTP API's TLS certificate (after a renewal).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := a.ReloadTLS(); err != nil {
					log.Error().Err(err).Msg("SIGHUP: tls certificate not reloaded; still serving the previous one")
				} else {
					log.Info().Msg("SIGHUP: tls certificate reloaded")
				}
			}
		}
	}()
	return a.Run(ctx)
}
