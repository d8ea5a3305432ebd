package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Transfers and hold of a live call (the "calls" command lists them):
//
//	switchboard calls transfer <call_id> <target_uri> [-mode bridge|warm|refer|auto] [-briefing TEXT]
//	    [-accept dtmf|answer] [-hold-audio music|silence|FILE.wav|PROMPT] [-timeout SECONDS]
//	    [-replaces] [-keep-listening] [-header Name=Value]...
//	switchboard calls hold <call_id> [-audio music|silence|FILE.wav|PROMPT]
//	switchboard calls resume <call_id>

// headerFlags collects -header Name=Value (repeatable).
type headerFlags map[string]string

func (h headerFlags) String() string { return fmt.Sprint(map[string]string(h)) }

func (h headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("a header is Name=Value, not %q", v)
	}
	h[strings.TrimSpace(name)] = value
	return nil
}

// callsTransfer hands a live call's caller to a human: POST
// /v1/calls/{id}/transfer. It returns at once with the transfer's id; the
// steps go to the call record (switchboard calls show) and the webhook.
func callsTransfer(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "calls transfer")
	mode := fs.String("mode", "", "bridge (default), warm, refer or auto")
	briefing := fs.String("briefing", "", "what the human hears before accepting (warm, or refer with -replaces)")
	accept := fs.String("accept", "", "how the human accepts a warm transfer: dtmf (1 accepts, 2 declines; the default) or answer")
	hold := fs.String("hold-audio", "", "what the caller hears meanwhile: music, silence, a WAV file under transfer.audio_dir, or a prompt")
	timeout := fs.Int("timeout", 0, "seconds the human's phone rings (5 to 120; 0: the appliance's transfer.ring_timeout)")
	replaces := fs.Bool("replaces", false, "mode refer: call the human first, then REFER the caller with Replaces")
	keep := fs.Bool("keep-listening", false, "keep the model session, silent, once bridged (for the transcript)")
	headers := headerFlags{}
	fs.Var(headers, "header", "a header of the human's INVITE, Name=Value (repeatable)")
	pos, err := positionals(fs, args, "a call id and a target URI (tel:+E.164 or sip:user@host)", 2)
	if err != nil {
		return err
	}
	body := map[string]any{"target_uri": pos[1]}
	set := func(k, v string) {
		if v != "" {
			body[k] = v
		}
	}
	set("mode", *mode)
	set("briefing", *briefing)
	set("accept", *accept)
	set("hold_audio", *hold)
	if *timeout != 0 {
		body["timeout_s"] = *timeout
	}
	if *replaces {
		body["replaces"] = true
	}
	if *keep {
		body["keep_listening"] = true
	}
	if len(headers) > 0 {
		body["headers"] = map[string]string(headers)
	}
	var res struct {
		TransferID string `json:"transfer_id"`
		Mode       string `json:"mode"`
	}
	return env.liveCallVerb(pos[0], "transfer", body, *asJSON, &res, func() string {
		return fmt.Sprintf("transfer %s (%s) of call %s to %s started: its steps are in switchboard calls show %s\n", res.TransferID, res.Mode, pos[0], pos[1], pos[0])
	})
}

// callsHold puts a live call's caller on hold: POST /v1/calls/{id}/hold.
func callsHold(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "calls hold")
	audio := fs.String("audio", "", "music (default), silence, a WAV file under transfer.audio_dir, or a prompt")
	id, err := idAndFlags(fs, args, "call id")
	if err != nil {
		return err
	}
	body := map[string]any{}
	if *audio != "" {
		body["audio"] = *audio
	}
	return env.liveCallVerb(id, "hold", body, *asJSON, nil, func() string { return fmt.Sprintf("call %s is on hold\n", id) })
}

// callsResume takes a live call's caller off hold: POST
// /v1/calls/{id}/resume.
func callsResume(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "calls resume")
	id, err := idAndFlags(fs, args, "call id")
	if err != nil {
		return err
	}
	return env.liveCallVerb(id, "resume", map[string]any{}, *asJSON, nil, func() string {
		return fmt.Sprintf("call %s is back with its agent\n", id)
	})
}

// liveCallVerb posts body to /v1/calls/{id}/{verb}; out, when set,
// receives the answer before done renders the line printed.
func (e *cliEnv) liveCallVerb(id, verb string, body any, asJSON bool, out any, done func() string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("POST", "/v1/calls/"+url.PathEscape(id)+"/"+verb, nil, body, &raw); err != nil {
		return err
	}
	if asJSON {
		return e.printJSON(raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("the daemon's answer: %w", err)
		}
	}
	fmt.Fprint(e.stdout, done())
	return nil
}
