package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"switchboard/app"
	"switchboard/config"
)

func init() {
	register("serve", "run the appliance (see README for settings)", serve)
}

func serve(env *cliEnv, args []string) error {
	cfg, err := config.Load(args, env.getenv)
	if err != nil {
		return err
	}
	log := app.NewLogger(os.Stderr, cfg.LogLevel, cfg.LogFormat)
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
