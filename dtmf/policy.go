package dtmf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Mode says what happens to the caller's digits.
type Mode string

// Policy modes.
const (
	// ModeModel buffers the digits and sends them to the model as text
	// (the default).
	ModeModel Mode = "model"
	// ModeRedact is for card numbers and PINs: digits go to the controller
	// and to tools, never to the model, the transcript, the logs or the call
	// record; the model is told only that digits were entered, and how many.
	ModeRedact Mode = "redact"
	// ModeRoute acts on mapped keys at once, without the model (e.g. 0
	// transfers to the operator, 9 hangs up); unmapped keys follow ModeModel.
	ModeRoute Mode = "route"
)

// ActionKind is what a routed key does.
type ActionKind string

// Route actions.
const (
	// ActionTransfer transfers the call to Action.Target (a SIP URI or a
	// number), as the transfer tool does.
	ActionTransfer ActionKind = "transfer"
	// ActionHangup ends the call.
	ActionHangup ActionKind = "hangup"
)

// Action is what a routed key does.
type Action struct {
	Kind   ActionKind `json:"kind"`
	Target string     `json:"target,omitempty"`
}

// Policy is the DTMF policy of an agent or a number. The zero value is
// ModeModel.
type Policy struct {
	// Mode is model (default when empty), redact or route.
	Mode Mode `json:"mode,omitempty"`
	// Routes maps a key ("0"-"9", "*", "#", "A"-"D") to an action; only
	// with ModeRoute, where it must not be empty.
	Routes map[string]Action `json:"routes,omitempty"`
}

var errInvalidPolicy = errors.New("dtmf: invalid policy")

// Validate reports the first problem of the policy, wrapped with which field.
func (p Policy) Validate() error {
	switch p.Mode {
	case "", ModeModel, ModeRedact:
		if len(p.Routes) > 0 {
			return fmt.Errorf("%w: routes need mode %q, not %q", errInvalidPolicy, ModeRoute, p.mode())
		}
		return nil
	case ModeRoute:
	default:
		return fmt.Errorf("%w: unknown mode %q (want model, redact or route)", errInvalidPolicy, p.Mode)
	}
	if len(p.Routes) == 0 {
		return fmt.Errorf("%w: mode route needs at least one route", errInvalidPolicy)
	}
	for k, a := range p.Routes {
		if len(k) != 1 || !ValidDigit(k[0]) || (k[0] >= 'a' && k[0] <= 'd') {
			return fmt.Errorf("%w: routes: key %q is not one of 0-9, *, #, A-D", errInvalidPolicy, k)
		}
		switch a.Kind {
		case ActionTransfer:
			if strings.TrimSpace(a.Target) == "" {
				return fmt.Errorf("%w: routes[%q]: transfer needs a target", errInvalidPolicy, k)
			}
		case ActionHangup:
			if a.Target != "" {
				return fmt.Errorf("%w: routes[%q]: hangup takes no target", errInvalidPolicy, k)
			}
		default:
			return fmt.Errorf("%w: routes[%q]: unknown action %q (want transfer or hangup)", errInvalidPolicy, k, a.Kind)
		}
	}
	return nil
}

func (p Policy) mode() Mode {
	if p.Mode == "" {
		return ModeModel
	}
	return p.Mode
}

// Route returns the action mapped to a key under ModeRoute.
func (p Policy) Route(d byte) (Action, bool) {
	if p.mode() != ModeRoute {
		return Action{}, false
	}
	d, ok := normalizeDigit(d)
	if !ok {
		return Action{}, false
	}
	a, ok := p.Routes[string(rune(d))]
	return a, ok
}

// Redacted reports whether the digits must be hidden from the model, the
// transcript, the logs and the call record.
func (p Policy) Redacted() bool { return p.mode() == ModeRedact }

// ModelText returns the user text message that carries a flush to the model.
// The same text is what the transcript and the call record keep.
//
// Under ModeModel and ModeRoute the digits are shown and the message says how
// the entry ended:
//
//	The caller entered 1234 on the phone keypad.
//	The caller entered 1234 on the phone keypad and pressed # to finish.
//	The caller entered 1234 on the phone keypad, then started speaking.
//	The caller pressed # on the phone keypad.
//
// Under ModeRedact only the count is told:
//
//	The caller entered 4 digits on the phone keypad and pressed # to finish. The digits are confidential and are not shown.
func (p Policy) ModelText(f Flush) string {
	var what string
	switch {
	case f.Digits == "" && f.Reason == FlushHash:
		return "The caller pressed # on the phone keypad."
	case p.Redacted():
		what = "The caller entered " + countDigits(len(f.Digits)) + " on the phone keypad"
	default:
		what = "The caller entered " + f.Digits + " on the phone keypad"
	}
	switch f.Reason {
	case FlushHash:
		what += " and pressed # to finish."
	case FlushSpeech:
		what += ", then started speaking."
	default:
		what += "."
	}
	if p.Redacted() {
		what += " The digits are confidential and are not shown."
	}
	return what
}

// LogDigits returns digits as they may appear in logs: unchanged, or under
// ModeRedact one '*' per key.
func (p Policy) LogDigits(digits string) string {
	if p.Redacted() {
		return strings.Repeat("*", len(digits))
	}
	return digits
}

func countDigits(n int) string {
	if n == 1 {
		return "1 digit"
	}
	return strconv.Itoa(n) + " digits"
}
