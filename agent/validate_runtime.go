package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/sip"
	"switchboard/transfer"
)

// Limits of the runtime settings.
const (
	MaxTools           = 32
	MaxTransferTargets = 32
	MaxToolTimeoutMS   = 30000
	MaxIdleTimeoutMS   = 600000
	MinIdleTimeoutMS   = 1000
	MaxDurationLimitS  = 4 * 3600
	MinDurationS       = 10
	// MaxComfortPromptLen bounds comfort_prompt, in characters: it is
	// said while the caller waits, so it must stay short.
	MaxComfortPromptLen = 200
)

// toolNameRE is the function-name charset realtime providers accept.
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// builtinTools are the names the runtime defines itself.
var builtinTools = map[string]bool{ToolTransferCall: true, ToolEndCall: true, ToolSendDTMF: true}

// applyRuntime validates and applies the runtime fields of req.
func (req *request) applyRuntime(c *Config) error {
	s := &c.Settings
	if req.Engine != nil {
		switch e := strings.ToLower(strings.TrimSpace(*req.Engine)); e {
		case EngineEcho, EngineUpstream, EngineLoopback:
			s.Engine = e
		default:
			return httpx.BadRequest("engine", "engine must be %q, %q or %q", EngineEcho, EngineUpstream, EngineLoopback)
		}
	}
	if req.Tools != nil {
		if err := checkTools(*req.Tools); err != nil {
			return err
		}
		s.Tools = *req.Tools
	}
	if req.TransferTargets != nil {
		if err := checkTargets(*req.TransferTargets); err != nil {
			return err
		}
		s.TransferTargets = *req.TransferTargets
	}
	if req.Fallback != nil {
		switch f := strings.ToLower(strings.TrimSpace(*req.Fallback)); f {
		case FallbackRefuse, FallbackApologize:
			s.Fallback = f
		default:
			return httpx.BadRequest("fallback", "fallback must be %q or %q", FallbackRefuse, FallbackApologize)
		}
	}
	if req.FallbackURI != nil {
		if *req.FallbackURI != "" {
			if err := CheckTransferURI(*req.FallbackURI); err != nil {
				return httpx.BadRequest("fallback_uri", "%v", err)
			}
		}
		s.FallbackURI = *req.FallbackURI
	}
	if req.Apology != nil {
		if utf8.RuneCountInString(*req.Apology) > MaxGreetingLen {
			return httpx.BadRequest("apology", "apology is longer than %d characters", MaxGreetingLen)
		}
		s.Apology = *req.Apology
	}
	if req.ComfortPrompt != nil {
		v := strings.TrimSpace(*req.ComfortPrompt)
		if utf8.RuneCountInString(v) > MaxComfortPromptLen {
			return httpx.BadRequest("comfort_prompt", "comfort_prompt is longer than %d characters", MaxComfortPromptLen)
		}
		s.ComfortPrompt = &v
	}
	if req.Announcement != nil {
		v := strings.TrimSpace(*req.Announcement)
		if utf8.RuneCountInString(v) > MaxGreetingLen {
			return httpx.BadRequest("transfer_announcement", "transfer_announcement is longer than %d characters", MaxGreetingLen)
		}
		s.TransferAnnouncement = &v
	}
	if req.IdleTimeoutMS != nil {
		if v := *req.IdleTimeoutMS; v != 0 && (v < MinIdleTimeoutMS || v > MaxIdleTimeoutMS) {
			return httpx.BadRequest("idle_timeout_ms", "idle_timeout_ms must be 0 (off) or %d to %d", MinIdleTimeoutMS, MaxIdleTimeoutMS)
		}
		s.IdleTimeoutMS = *req.IdleTimeoutMS
	}
	if req.DTMF != nil {
		if err := req.DTMF.Validate(); err != nil {
			return httpx.BadRequest("dtmf", "%v", err)
		}
		for k, a := range req.DTMF.Routes {
			if a.Kind == dtmf.ActionTransfer {
				if err := CheckTransferURI(a.Target); err != nil {
					return httpx.BadRequest("dtmf.routes."+k+".target", "%v", err)
				}
			}
		}
		s.DTMF = *req.DTMF
	}
	if req.DTMFInband != nil {
		switch v := call.Inband(strings.ToLower(strings.TrimSpace(*req.DTMFInband))); v {
		case "", call.InbandAuto, call.InbandOn, call.InbandOff:
			s.DTMFInband = string(v)
		default:
			return httpx.BadRequest("dtmf_inband", "dtmf_inband must be %q, %q or %q", call.InbandAuto, call.InbandOn, call.InbandOff)
		}
	}
	if req.Recording != nil {
		r := *req.Recording
		s.Recording = &r
	}
	if req.MaxDurationS != nil {
		if v := *req.MaxDurationS; v != 0 && (v < MinDurationS || v > MaxDurationLimitS) {
			return httpx.BadRequest("max_duration_s", "max_duration_s must be 0 (off) or %d to %d", MinDurationS, MaxDurationLimitS)
		}
		s.MaxDurationS = *req.MaxDurationS
	}
	return nil
}

func checkTools(tools []Tool) error {
	if len(tools) > MaxTools {
		return httpx.BadRequest("tools", "at most %d tools", MaxTools)
	}
	seen := map[string]bool{}
	for i := range tools {
		t := &tools[i]
		p := fmt.Sprintf("tools[%d]", i)
		switch {
		case !toolNameRE.MatchString(t.Name):
			return httpx.BadRequest(p+".name", "tool names are 1-64 letters, digits, _ or -")
		case builtinTools[t.Name]:
			return httpx.BadRequest(p+".name", "%q is a built-in tool", t.Name)
		case seen[t.Name]:
			return httpx.BadRequest(p+".name", "duplicate tool name %q", t.Name)
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(t.Parameters, &obj); err != nil {
				return httpx.BadRequest(p+".parameters", "parameters must be a JSON schema object")
			}
		}
		if err := checkToolURL(t.URL); err != nil {
			return httpx.BadRequest(p+".url", "%v", err)
		}
		if t.TimeoutMS < 0 || t.TimeoutMS > MaxToolTimeoutMS {
			return httpx.BadRequest(p+".timeout_ms", "timeout_ms must be 0 (default %d) to %d", DefaultToolTimeout, MaxToolTimeoutMS)
		}
	}
	return nil
}

// checkToolAddresses refuses tool URLs (of this request) that name a
// forbidden address (link-local, cloud metadata) under the service's
// policy.
func (s *Service) checkToolAddresses(req *request) error {
	if req.Tools == nil {
		return nil
	}
	for i, t := range *req.Tools {
		if err := s.addrs.CheckURL(t.URL); err != nil {
			p := fmt.Sprintf("tools[%d].url", i)
			return httpx.BadRequest(p, "%s must not target a link-local or cloud metadata address (%v); the setting webhooks.allow_addresses can allow it", p, err)
		}
	}
	return nil
}

// checkToolURL wants HTTPS; plain HTTP is accepted only for loopback
// hosts (a tool server on the appliance itself).
func checkToolURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("url must be an absolute https URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if host == "localhost" {
			return nil
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("url must use https (http only for loopback hosts)")
	}
	return fmt.Errorf("url must be an absolute https URL")
}

func checkTargets(ts []TransferTarget) error {
	if len(ts) > MaxTransferTargets {
		return httpx.BadRequest("transfer_targets", "at most %d transfer targets", MaxTransferTargets)
	}
	seen := map[string]bool{}
	for i, t := range ts {
		p := fmt.Sprintf("transfer_targets[%d]", i)
		if strings.TrimSpace(t.Name) == "" || utf8.RuneCountInString(t.Name) > 64 {
			return httpx.BadRequest(p+".name", "name is required (at most 64 characters)")
		}
		if seen[strings.ToLower(t.Name)] {
			return httpx.BadRequest(p+".name", "duplicate transfer target %q", t.Name)
		}
		seen[strings.ToLower(t.Name)] = true
		if err := CheckTransferURI(t.URI); err != nil {
			return httpx.BadRequest(p+".uri", "%v", err)
		}
		if _, err := sip.CheckHeaders(t.Headers); err != nil {
			var he *sip.HeaderError
			if errors.As(err, &he) {
				return httpx.BadRequest(he.Param(p+".headers"), "%s", he.Error())
			}
			return err
		}
		for name, v := range t.Headers {
			if err := CheckTemplate(v); err != nil {
				return httpx.BadRequest(p+".headers."+name, "%v", err)
			}
		}
		if t.Mode == "" {
			if t.Replaces || t.Briefing != "" || t.HoldAudio != "" || t.Accept != "" || t.TimeoutS != 0 || t.KeepListening {
				return httpx.BadRequest(p+".mode", "mode is required with replaces, briefing, hold_audio, accept, timeout_s or keep_listening: refer, bridge, warm or auto")
			}
			continue
		}
		r := transfer.Request{TargetURI: t.URI, Mode: transfer.Mode(t.Mode), Replaces: t.Replaces, Briefing: t.Briefing,
			HoldAudio: t.HoldAudio, Accept: transfer.Accept(t.Accept), Timeout: time.Duration(t.TimeoutS) * time.Second}
		if err := transfer.Check(p+".", &r); err != nil {
			return err
		}
	}
	return nil
}

// telRE is tel:+E.164.
var telRE = regexp.MustCompile(`^tel:\+[1-9][0-9]{6,14}$`)

// sipRE is sip:user@host[:port] (or sips:).
var sipRE = regexp.MustCompile(`^sips?:[^@\s<>"]+@[A-Za-z0-9.\-\[\]:]+$`)

// CheckTransferURI accepts tel:+E.164 and sip:user@host, the forms a SIP
// REFER can carry.
func CheckTransferURI(uri string) error {
	if telRE.MatchString(uri) || sipRE.MatchString(uri) {
		return nil
	}
	return fmt.Errorf("%q is neither tel:+E.164 nor sip:user@host", uri)
}
