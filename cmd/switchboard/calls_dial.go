package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// dialPoll is how often `calls dial --wait` reads the call's record.
const dialPoll = 250 * time.Millisecond

// callsDial places a call: POST /v1/calls, as the API does it. With
// --wait it follows the call's progress until it ends.
func callsDial(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "calls dial")
	to := fs.String("to", "", "the callee: an E.164 number (through the --from number's outbound trunk) or a SIP URI")
	from := fs.String("from", "", "one of your team's numbers, in E.164")
	agentID := fs.String("agent", "", "agent id (default: the --from number's route, its agent or its webhook)")
	md := fs.String("machine-detection", "", "off (default), detect or hangup_on_machine")
	ring := fs.Int("ring-timeout", 0, "seconds the callee's phone rings before the call is given up as no-answer (5 to 120; default: the appliance's)")
	wait := fs.Bool("wait", false, "follow the call until it ends, printing each step")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	body := map[string]any{"to": *to, "from": *from}
	if *agentID != "" {
		body["agent_id"] = *agentID
	}
	if *md != "" {
		body["machine_detection"] = *md
	}
	if *ring != 0 {
		body["ring_timeout_s"] = *ring
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("POST", "/v1/calls", nil, body, &raw); err != nil {
		return err
	}
	var cr callRecord
	if err := json.Unmarshal(raw, &cr); err != nil {
		return err
	}
	if !*wait {
		if *asJSON {
			return env.printJSON(raw)
		}
		fmt.Fprintf(env.stdout, "placed call %s to %s from %s: %s\n", cr.CallID, cr.To, cr.From, orDash(cr.Progress))
		return nil
	}
	if !*asJSON {
		fmt.Fprintf(env.stdout, "placed call %s to %s from %s\n", cr.CallID, cr.To, cr.From)
	}
	seen := map[string]bool{}
	for {
		if !*asJSON {
			for _, step := range []string{cr.Progress, "answered_by " + cr.AnsweredBy} {
				if step != "" && step != "answered_by " && !seen[step] {
					seen[step] = true
					fmt.Fprintf(env.stdout, "  %s %s\n", time.Now().Format("15:04:05.0"), step)
				}
			}
		}
		if cr.State == "ended" {
			break
		}
		time.Sleep(dialPoll)
		if err := c.do("GET", "/v1/calls/"+url.PathEscape(cr.CallID), nil, nil, &raw); err != nil {
			return err
		}
		cr = callRecord{}
		if err := json.Unmarshal(raw, &cr); err != nil {
			return err
		}
	}
	if *asJSON {
		return env.printJSON(raw)
	}
	env.showCall(&cr)
	return nil
}
