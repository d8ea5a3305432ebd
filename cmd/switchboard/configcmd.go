package main

import (
	"fmt"

	"switchboard/config"
)

func init() {
	register("config", "print every setting with its flag, environment variable and default (Markdown)", func(env *cliEnv, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("config takes no arguments")
		}
		_, err := fmt.Fprint(env.stdout, config.Markdown())
		return err
	})
}
