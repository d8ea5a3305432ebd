package transfer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/media"
	"switchboard/media/wav"
)

// Limits of hold audio.
const (
	// maxHoldWAV bounds a hold WAV file (ten minutes of 16-bit audio at
	// 48 kHz is 55 MB).
	maxHoldWAV = 64 << 20
	// promptPause is the silence after a hold prompt before it is said
	// again.
	promptPause = 4
	// maxLoops bounds the hold audio kept converted (WAV files and
	// prompts); past it the cache starts again.
	maxLoops = 32
)

// loops caches the hold audio made from files and prompts: one media.Loop
// (converted once per format) for every call that holds with it.
type loops struct {
	mu sync.Mutex
	m  map[string]*media.Loop
}

var holdLoops = &loops{m: map[string]*media.Loop{}}

func (l *loops) get(key string, make func() (*media.Loop, error)) (*media.Loop, error) {
	l.mu.Lock()
	lp, ok := l.m[key]
	l.mu.Unlock()
	if ok {
		return lp, nil
	}
	lp, err := make()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	if len(l.m) >= maxLoops {
		l.m = map[string]*media.Loop{}
	}
	l.m[key] = lp
	l.mu.Unlock()
	return lp, nil
}

// CheckHold checks a hold audio value of the hold endpoint (field names
// it in the error: a 400).
func (s *Service) CheckHold(field, spec string) error {
	if err := checkHoldAudio(spec); err != nil {
		return httpx.BadRequest(field, "%s: %v", field, strings.TrimPrefix(err.Error(), "hold_audio: "))
	}
	switch {
	case spec == "" || spec == HoldMusic || spec == HoldSilence:
	case isWAV(spec):
		if _, err := s.wavLoop(spec); err != nil {
			return httpx.BadRequest(field, "%v", err)
		}
	case s.opts.Voice == nil:
		return httpx.BadRequest(field, "this appliance has no speech engine to speak a hold prompt: use music, silence or a WAV file")
	}
	return nil
}

// HoldSource is what a caller on hold hears for a hold audio value (""
// the appliance's default): the music, silence, a WAV file's audio or a
// prompt spoken in voice, each played over and over.
func (s *Service) HoldSource(ctx context.Context, spec, voice string) (call.Source, error) {
	if spec == "" {
		spec = s.opts.HoldAudio
	}
	switch {
	case spec == HoldMusic:
		return call.FromLoop(s.music), nil
	case spec == HoldSilence:
		return call.Nothing(), nil
	case isWAV(spec):
		l, err := s.wavLoop(spec)
		if err != nil {
			return call.Source{}, err
		}
		return call.FromLoop(l), nil
	}
	if s.opts.Voice == nil {
		return call.Source{}, errors.New("hold prompt: no speech engine")
	}
	l, err := holdLoops.get("prompt\x00"+voice+"\x00"+spec, func() (*media.Loop, error) {
		b, err := s.opts.Voice.Render(ctx, spec, voice, musicRate)
		if err != nil {
			return nil, fmt.Errorf("hold prompt: %w", err)
		}
		pcm := media.DecodePCM16LE(nil, b)
		pcm = append(pcm, make([]int16, promptPause*musicRate)...)
		return media.NewLoop(pcm, musicRate)
	})
	if err != nil {
		return call.Source{}, err
	}
	return call.FromLoop(l), nil
}

// wavLoop reads a hold WAV file under the audio directory (mono or the
// first channel; resampled to 16 kHz when its rate is not one a loop
// takes).
func (s *Service) wavLoop(name string) (*media.Loop, error) {
	if s.opts.AudioDir == "" {
		return nil, errors.New("no audio directory is configured (transfer.audio_dir) to read hold WAV files from")
	}
	path := filepath.Join(s.opts.AudioDir, filepath.Clean("/"+name))
	return holdLoops.get("wav\x00"+path, func() (*media.Loop, error) {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("hold audio %s: no such file in the audio directory", name)
		}
		if fi.Size() > maxHoldWAV {
			return nil, fmt.Errorf("hold audio %s is larger than %d MiB", name, maxHoldWAV>>20)
		}
		a, err := wav.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("hold audio %s: %w", name, err)
		}
		pcm, rate := a.Mono(), a.SampleRate
		if media.PCM16(rate).Check() != nil {
			pcm, rate = media.Convert(pcm, rate, musicRate), musicRate
		}
		l, err := media.NewLoop(pcm, rate)
		if err != nil {
			return nil, fmt.Errorf("hold audio %s: %w", name, err)
		}
		return l, nil
	})
}

// Hold puts c's caller on hold: they hear spec's audio and the
// conversation hears nobody.
func (s *Service) Hold(ctx context.Context, c Call, spec, voice string) error {
	src, err := s.HoldSource(ctx, spec, voice)
	if err != nil {
		return err
	}
	if err := c.ConversationHears(nil); err != nil {
		return err
	}
	return c.Hear(c.Caller(), src)
}

// Resume takes c's caller off hold: they hear the conversation again and
// it hears them.
func Resume(c Call) error {
	if err := c.Hear(c.Caller(), call.FromConversation()); err != nil {
		return err
	}
	return c.ConversationHears(c.Caller())
}
