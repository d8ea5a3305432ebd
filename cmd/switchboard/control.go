package main

import (
	"encoding/json"
	"fmt"
	"net/url"
)

// Call control verbs. The "calls" command (calls.go) lists them beside
// list and show:
//
//	switchboard calls refer <call_id> <target_uri>   (tel:+E.164 or sip:user@host)
//	switchboard calls hangup <call_id>
//	switchboard calls dtmf <call_id> <digits>

// callsRefer transfers a live call: POST /v1/realtime/calls/{id}/refer.
func callsRefer(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "calls refer")
	pos, err := positionals(fs, args, "a call id and a target URI (tel:+E.164 or sip:user@host)", 2)
	if err != nil {
		return err
	}
	return env.callControl(pos[0], "refer", map[string]string{"target_uri": pos[1]}, *asJSON,
		fmt.Sprintf("transfer of call %s to %s accepted by the caller's side\n", pos[0], pos[1]))
}

// callsHangup ends a live call: POST /v1/realtime/calls/{id}/hangup.
func callsHangup(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "calls hangup")
	pos, err := positionals(fs, args, "a call id", 1)
	if err != nil {
		return err
	}
	return env.callControl(pos[0], "hangup", nil, *asJSON, fmt.Sprintf("hung up call %s\n", pos[0]))
}

// callsDTMF plays digits to the caller's side: POST
// /v1/realtime/calls/{id}/dtmf.
func callsDTMF(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "calls dtmf")
	pos, err := positionals(fs, args, "a call id and digits (0-9, *, #, A-D)", 2)
	if err != nil {
		return err
	}
	return env.callControl(pos[0], "dtmf", map[string]string{"digits": pos[1]}, *asJSON,
		fmt.Sprintf("sent %s to call %s\n", pos[1], pos[0]))
}

func (e *cliEnv) callControl(id, verb string, body any, asJSON bool, done string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("POST", "/v1/realtime/calls/"+url.PathEscape(id)+"/"+verb, nil, body, &raw); err != nil {
		return err
	}
	if asJSON {
		return e.printJSON(raw)
	}
	fmt.Fprint(e.stdout, done)
	return nil
}
