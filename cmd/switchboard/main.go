// Command switchboard is the telephony voice-agent appliance (switchboard
// serve) and its admin tool (switchboard numbers|agents|keys|audit …).
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one sub-command: run gets the arguments after its name.
type command struct {
	summary string
	run     func(env *cliEnv, args []string) error
}

// commands is the registry of sub-commands; each file adds its own in init.
var commands = map[string]command{}

func register(name, summary string, run func(env *cliEnv, args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "switchboard: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	env := &cliEnv{stdout: stdout, stderr: stderr, getenv: getenv}
	if err := cmd.run(env, args[1:]); err != nil {
		fmt.Fprintf(stderr, "switchboard %s: %v\n", args[0], err)
		if code, ok := err.(exitCoder); ok {
			return code.ExitCode()
		}
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: switchboard <command> [arguments]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// exitCoder lets an error choose the process exit status.
type exitCoder interface{ ExitCode() int }
