package config

import (
	"errors"
	"time"
)

// Transfer configures the transfers that hand a caller to a human
// (bridged, warm, REFER with Replaces, auto) and hold.
type Transfer struct {
	// RingTimeout is how long the human's phone rings when a request
	// gives no timeout_s.
	RingTimeout time.Duration `yaml:"ring_timeout"`
	// AcceptTimeout is how long the human of a warm transfer has to
	// accept once the briefing ended.
	AcceptTimeout time.Duration `yaml:"accept_timeout"`
	// ReferNotifyTimeout is how long mode auto waits for the first
	// NOTIFY of an accepted REFER before it bridges instead.
	ReferNotifyTimeout time.Duration `yaml:"refer_notify_timeout"`
	// HoldAudio is what a caller on hold hears when a request names
	// nothing: music, silence, a WAV file under AudioDir or a prompt.
	HoldAudio string `yaml:"hold_audio"`
	// AudioDir is where hold WAV files are read from; empty: audio/ in
	// the data directory.
	AudioDir string `yaml:"audio_dir"`
}

// validate checks the transfer settings.
func (t Transfer) validate() error {
	var errs []error
	if t.RingTimeout < 5*time.Second || t.RingTimeout > 120*time.Second {
		errs = append(errs, errors.New("transfer.ring_timeout: must be within 5s..120s"))
	}
	if t.AcceptTimeout < time.Second || t.AcceptTimeout > 5*time.Minute {
		errs = append(errs, errors.New("transfer.accept_timeout: must be within 1s..5m"))
	}
	if t.ReferNotifyTimeout < 500*time.Millisecond || t.ReferNotifyTimeout > time.Minute {
		errs = append(errs, errors.New("transfer.refer_notify_timeout: must be within 500ms..1m"))
	}
	if t.HoldAudio == "" {
		errs = append(errs, errors.New("transfer.hold_audio: must not be empty (music, silence, a WAV file or a prompt)"))
	}
	return errors.Join(errs...)
}
