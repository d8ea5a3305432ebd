package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"switchboard/store"
)

func init() {
	register("store", "store copy: move a node's SQLite records into the PostgreSQL database of a fleet", func(env *cliEnv, args []string) error {
		return subcommand(env, "store", args, map[string]func(*cliEnv, []string) error{"copy": storeCopy})
	})
}

// storeCopy is `switchboard store copy --to postgres://…`: it copies every
// record of the SQLite database in the data directory into an empty
// PostgreSQL database (migrating both first). Stop the node before.
func storeCopy(env *cliEnv, args []string) error {
	fs := flag.NewFlagSet("store copy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dataDir := fs.String("data-dir", or(env.getenv("SWITCHBOARD_DATA_DIR"), "./var"), "data directory holding the SQLite database")
	to := fs.String("to", env.getenv("SWITCHBOARD_DATABASE_URL"), "PostgreSQL URL of the fleet's (empty) database")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\nusage: switchboard store copy [--data-dir DIR] --to postgres://user:password@host:5432/db", err)
	}
	if *to == "" {
		return errors.New("--to postgres://… (or SWITCHBOARD_DATABASE_URL) is required")
	}
	ctx := context.Background()
	src, err := store.OpenSQLite(ctx, *dataDir)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := store.Open(ctx, *to, "")
	if err != nil {
		return err
	}
	defer dst.Close()
	if dst.Dialect() != "postgres" {
		return errors.New("--to must be a postgres:// URL")
	}
	counts, err := dst.CopyFrom(ctx, src)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(counts))
	for t := range counts {
		names = append(names, t)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, t := range names {
		fmt.Fprintf(&b, "%s %d\n", t, counts[t])
	}
	fmt.Fprintf(env.stdout, "copied into PostgreSQL (rows per table):\n%s", b.String())
	return nil
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
