package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// outboundFlags are the flags of a number's outbound trunk (create and
// update).
type outboundFlags struct {
	uri, username, password, passwordFile, callerID *string
}

func addOutboundFlags(fs *flag.FlagSet) *outboundFlags {
	return &outboundFlags{
		uri:          fs.String("outbound-uri", "", "outbound trunk: the carrier's SIP URI, sip:host[:port][;transport=udp|tcp|tls] or sips:host[:port]"),
		username:     fs.String("outbound-username", "", "digest username for the carrier's challenge (with --outbound-password)"),
		password:     fs.String("outbound-password", "", "digest password for the carrier's challenge (see also --outbound-password-file)"),
		passwordFile: fs.String("outbound-password-file", "", "read the outbound digest password from this file (keeps it out of ps)"),
		callerID:     fs.String("outbound-caller-id", "", "From user of placed calls (default: the number)"),
	}
}

// body builds the outbound_trunk object from the flags that were given,
// or nil when none was.
func (o *outboundFlags) body(set map[string]bool) (map[string]any, error) {
	ob := map[string]any{}
	password := *o.password
	if set["outbound-password-file"] {
		if set["outbound-password"] {
			return nil, errors.New("--outbound-password and --outbound-password-file are exclusive")
		}
		b, err := os.ReadFile(*o.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("read the outbound password: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
		set["outbound-password"] = true
	}
	if set["outbound-uri"] {
		ob["uri"] = *o.uri
	}
	if set["outbound-username"] || set["outbound-password"] {
		ob["auth_username"], ob["auth_password"] = *o.username, password
	}
	if set["outbound-caller-id"] {
		ob["caller_id"] = *o.callerID
	}
	if len(ob) == 0 {
		return nil, nil
	}
	return ob, nil
}
