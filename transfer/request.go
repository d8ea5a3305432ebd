package transfer

import (
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/api/httpx"
	"switchboard/call"
)

// Mode is how a transfer hands the caller on.
type Mode string

// Modes of a transfer.
const (
	// ModeRefer asks the caller's side to call the target itself (SIP
	// REFER); with Replaces, to take the place of a consultation leg the
	// appliance set up to the target.
	ModeRefer Mode = "refer"
	// ModeBridge calls the target and connects the caller to it through
	// the appliance as soon as it answers.
	ModeBridge Mode = "bridge"
	// ModeWarm holds the caller with music, calls the target, briefs the
	// human and connects them once the human accepts.
	ModeWarm Mode = "warm"
	// ModeAuto tries a REFER and bridges when the caller's side refuses
	// it (403, 405, 501) or reports nothing on it in time.
	ModeAuto Mode = "auto"
)

// Accept is how the human of a warm transfer accepts the caller.
type Accept string

// Ways to accept.
const (
	// AcceptDTMF: the human presses 1 to accept, 2 to decline.
	AcceptDTMF Accept = "dtmf"
	// AcceptAnswer: the caller is connected once the briefing ended (2
	// still declines).
	AcceptAnswer Accept = "answer"
)

// Hold audio keywords (Request.HoldAudio); anything else is a WAV file
// (a name ending in .wav, under the audio directory) or a prompt spoken
// with the speech engine.
const (
	HoldMusic   = "music"
	HoldSilence = "silence"
)

// Limits of a request.
const (
	// MaxBriefing bounds a briefing's text (about two minutes of speech).
	MaxBriefing = 2000
	// MaxHoldPrompt bounds a hold prompt's text.
	MaxHoldPrompt = 500
	// MinTimeout and MaxTimeout bound timeout_s.
	MinTimeout = 5 * time.Second
	MaxTimeout = 120 * time.Second
)

// Request is one transfer as the API or an agent's transfer target asks
// for it, checked by Check.
type Request struct {
	// TargetURI is the human: tel:+E.164 (called through the number's
	// outbound trunk) or sip:user@host.
	TargetURI string
	Mode      Mode
	// Replaces (ModeRefer) first calls the target (a consultation leg,
	// briefed and accepted as a warm transfer is when Briefing is set),
	// then sends the caller's side a REFER whose Refer-To replaces that
	// leg: the PBX splices the two calls itself.
	Replaces bool
	// Briefing is what the human hears once they answer (ModeWarm, or
	// ModeRefer with Replaces); "" for none.
	Briefing string
	// HoldAudio is what the caller hears meanwhile: music, silence, a WAV
	// file or a prompt ("": the appliance's default).
	HoldAudio string
	// Accept is how the human of a warm transfer accepts ("": dtmf). A
	// refer with Replaces asks the human to accept only when it has a
	// briefing or an accept.
	Accept Accept
	// Timeout bounds the ring (0: the appliance's default).
	Timeout time.Duration
	// Headers are added to the INVITE of the human's leg.
	Headers []call.Header
	// KeepListening keeps the model session once the caller is bridged:
	// it hears the caller (for the transcript) and says nothing.
	KeepListening bool
	// Voice is the speech engine's voice for the briefing and a hold
	// prompt ("": the default).
	Voice string
	// By says who asked: "api" or "agent".
	By string
}

// telRE is tel:+E.164; sipRE is sip:user@host[:port] with optional
// parameters (a transport).
var (
	telRE = regexp.MustCompile(`^tel:\+[1-9][0-9]{6,14}$`)
	sipRE = regexp.MustCompile(`^sips?:[^@\s<>"?]+@[A-Za-z0-9.\-\[\]:]+(;[A-Za-z0-9=._\-]+)*$`)
)

// IsTel reports whether target is a tel: URI (called through a trunk).
func IsTel(target string) bool { return strings.HasPrefix(target, "tel:") }

// Check validates the options of a transfer as an API request (prefix
// "") or an agent's transfer target (prefix "transfer_targets[3].")
// gives them; the error is a 400 naming the field. It fills the
// defaults it can (Mode: bridge; Accept: dtmf for a warm transfer).
func Check(prefix string, r *Request) error {
	r.TargetURI = strings.TrimSpace(r.TargetURI)
	switch {
	case r.TargetURI == "":
		return httpx.BadRequest(prefix+"target_uri", "target_uri is required: tel:+E.164 or sip:user@host")
	case !telRE.MatchString(r.TargetURI) && !sipRE.MatchString(r.TargetURI):
		return httpx.BadRequest(prefix+"target_uri", "target_uri %q is neither tel:+E.164 nor sip:user@host[:port]", r.TargetURI)
	}
	switch r.Mode {
	case "":
		r.Mode = ModeBridge
	case ModeRefer, ModeBridge, ModeWarm, ModeAuto:
	default:
		return httpx.BadRequest(prefix+"mode", "mode must be refer, bridge, warm or auto")
	}
	if r.Replaces && r.Mode != ModeRefer {
		return httpx.BadRequest(prefix+"replaces", "replaces applies to mode refer (an attended transfer)")
	}
	briefed := r.Mode == ModeWarm || (r.Mode == ModeRefer && r.Replaces)
	if r.Briefing != "" && !briefed {
		return httpx.BadRequest(prefix+"briefing", "briefing applies to mode warm (or refer with replaces): the human hears it before accepting")
	}
	if utf8.RuneCountInString(r.Briefing) > MaxBriefing {
		return httpx.BadRequest(prefix+"briefing", "briefing is longer than %d characters", MaxBriefing)
	}
	switch r.Accept {
	case "":
		if r.Mode == ModeWarm || (briefed && r.Briefing != "") {
			r.Accept = AcceptDTMF
		}
	case AcceptDTMF, AcceptAnswer:
		if !briefed {
			return httpx.BadRequest(prefix+"accept", "accept applies to mode warm (or refer with replaces)")
		}
	default:
		return httpx.BadRequest(prefix+"accept", "accept must be dtmf or answer")
	}
	if r.Timeout != 0 && (r.Timeout < MinTimeout || r.Timeout > MaxTimeout) {
		return httpx.BadRequest(prefix+"timeout_s", "timeout_s must be %d to %d seconds", int(MinTimeout/time.Second), int(MaxTimeout/time.Second))
	}
	if err := checkHoldAudio(r.HoldAudio); err != nil {
		return httpx.BadRequest(prefix+"hold_audio", "%v", err)
	}
	return nil
}

// holdErr is a hold_audio that cannot be used.
type holdErr string

func (e holdErr) Error() string { return string(e) }

// checkHoldAudio checks the form of a hold_audio value: a keyword, a WAV
// file's name relative to the audio directory, or a prompt.
func checkHoldAudio(v string) error {
	switch {
	case v == "" || v == HoldMusic || v == HoldSilence:
		return nil
	case isWAV(v):
		clean := filepath.Clean(v)
		if filepath.IsAbs(v) || clean == ".." || strings.HasPrefix(clean, "../") {
			return holdErr("a hold_audio WAV file is named relative to the audio directory (transfer.audio_dir), without ..")
		}
		return nil
	case utf8.RuneCountInString(v) > MaxHoldPrompt:
		return holdErr("a hold_audio prompt is at most 500 characters")
	case strings.TrimSpace(v) == "":
		return holdErr("hold_audio is blank: music, silence, a WAV file or a prompt")
	}
	return nil
}

// isWAV reports whether a hold_audio value names a WAV file.
func isWAV(v string) bool {
	return strings.HasSuffix(strings.ToLower(v), ".wav") && !strings.ContainsAny(v, " \t\n")
}
