// Command switchboard is the telephony voice-agent appliance and its admin tool.
package main

import (
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: switchboard serve|numbers|agents|keys|audit ...")
		return 2
	}
	fmt.Fprintf(os.Stderr, "switchboard: unknown command %q\n", args[0])
	return 2
}
