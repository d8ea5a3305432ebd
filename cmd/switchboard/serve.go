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
	return a.Run(ctx)
}
