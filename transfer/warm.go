package transfer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"switchboard/amd"
	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/sip"
)

// Keys of the human of a warm transfer.
const (
	keyAccept  = '1'
	keyDecline = '2'
)

// briefRate is the rate of the briefing: the human's leg is G.711 (a
// placed leg speaks PCMU or PCMA).
const briefRate = media.ClockRate

// renderTimeout bounds rendering a briefing: past it the human hears the
// chime instead.
const renderTimeout = 5 * time.Second

// machineWait bounds the wait for the machine detector's verdict before
// a warm transfer that accepts on answer connects: the detector's own
// longest analysis (amd.Options.MaxAnalysis, 6 s) and a margin, for a
// human's leg that sends no audio at all.
const machineWait = 7 * time.Second

// briefingItem tags the briefing in the human's playout.
const briefingItem = "briefing"

// briefingText is what the human hears: the briefing and how to answer
// it.
func (t *Transfer) briefingText() string {
	text := t.req.Briefing
	if t.req.Accept == AcceptDTMF {
		if text != "" {
			text += " "
		}
		text += "Press 1 to accept this call, or 2 to decline it."
	}
	return text
}

// render renders the briefing in the background (while the human's phone
// rings): the channel gets PCM16LE at briefRate, or a chime when it
// cannot be spoken. Run waits for it.
func (t *Transfer) render(ctx context.Context) <-chan []byte {
	ch := make(chan []byte, 1)
	text := t.briefingText()
	if text == "" {
		ch <- nil
		return ch
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		rctx, cancel := context.WithTimeout(ctx, renderTimeout)
		defer cancel()
		var pcm []byte
		var err error
		if v := t.s.opts.Voice; v != nil {
			pcm, err = v.Render(rctx, text, t.req.Voice, briefRate)
		} else {
			err = errors.New("no speech engine")
		}
		if err != nil {
			t.log.Warn().Err(err).Msg("briefing not rendered: the human hears a chime")
			pcm = chime(briefRate)
		}
		ch <- pcm
	}()
	return ch
}

// verdict is a machine detector's event with its reason.
type verdict struct {
	ev     amd.Event
	reason string
}

// brief plays the briefing to the human and waits for their answer: nil
// once they accepted (key 1; with accept "answer", the briefing over and
// no machine heard), else the outcome (declined, voicemail, no answer,
// the human or the caller gone).
func (t *Transfer) brief(ctx context.Context, brief <-chan []byte) *Result {
	human := t.human
	audio, hctx := human.Leg().Audio(), human.Leg().Context()
	keys := make(chan byte, 4)
	human.OnKey(func(ev dtmf.Event) {
		select {
		case keys <- ev.Digit:
		default:
		}
	})
	verdicts := make(chan verdict, 4)
	det := amd.New(amd.Options{Rate: media.ClockRate})
	decided := false
	l, err := audio.ListenPCM(media.ClockRate, func(pcm []int16) {
		if ev := det.Frame(pcm); ev != amd.None {
			select {
			case verdicts <- verdict{ev: ev, reason: det.Reason()}:
			default:
			}
		}
	})
	if err != nil {
		t.log.Warn().Err(err).Msg("machine detection not started")
		decided = true
	} else {
		defer l.Stop()
	}
	var pcm []byte
	select {
	case pcm = <-brief:
	case <-ctx.Done():
		return &Result{Status: StatusCallerLeft, Reason: "the caller hung up"}
	case <-hctx.Done():
		return humanGone(hctx, human)
	}
	if pcm != nil {
		w, err := audio.Writer(media.PCM16(briefRate), media.WriterOptions{})
		if err != nil {
			return &Result{Status: StatusFailed, Reason: "briefing: " + err.Error()}
		}
		w.Write(briefingItem, pcm)
	}
	t.update(StatusBriefing, 0, "")
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	wait := time.NewTimer(machineWait)
	defer wait.Stop()
	accept := time.NewTimer(time.Hour)
	accept.Stop()
	defer accept.Stop()
	played := false
	for {
		select {
		case <-ctx.Done():
			return &Result{Status: StatusCallerLeft, Reason: "the caller hung up"}
		case <-hctx.Done():
			return humanGone(hctx, human)
		case k := <-keys:
			switch k {
			case keyAccept:
				t.log.Info().Msg("the human accepted (key 1)")
				return nil
			case keyDecline:
				return &Result{Status: StatusDeclined, Reason: "the human pressed 2"}
			}
		case v := <-verdicts:
			switch v.ev {
			case amd.Machine:
				return &Result{Status: StatusVoicemail, Reason: "an answering machine answered (" + v.reason + ")"}
			case amd.Human, amd.Unknown:
				decided = true
			}
		case <-wait.C:
			decided = true
		case <-tick.C:
			if !played && audio.Playout().Len() == 0 {
				played = true
				if t.req.Accept == AcceptDTMF {
					accept.Reset(t.s.opts.AcceptTimeout)
				}
			}
		case <-accept.C:
			return &Result{Status: StatusNoAnswer, Reason: fmt.Sprintf("the human did not accept within %s of the briefing", t.s.opts.AcceptTimeout)}
		}
		if played && decided && t.req.Accept == AcceptAnswer {
			t.log.Info().Msg("briefing over: connecting (accept on answer)")
			return nil
		}
	}
}

// humanGone is the outcome of a human's leg that ended before the caller
// was connected: declined when they hung up, failed otherwise, with why
// the call dropped their leg when it did (their media stopped: the leg's
// own cause then only says it was hung up).
func humanGone(hctx context.Context, human *call.Party) *Result {
	cause := context.Cause(hctx)
	if errors.Is(cause, sip.ErrRemoteBye) {
		return &Result{Status: StatusDeclined, Reason: "the human hung up"}
	}
	why := errText(cause)
	if d := human.Dropped(); d != "" {
		why = d
	}
	return &Result{Status: StatusFailed, Reason: "the human's leg ended: " + why}
}

func errText(err error) string {
	if err == nil {
		return "unknown"
	}
	return err.Error()
}

// chime is a soft two-note chime (what the human hears when the briefing
// cannot be spoken), as PCM16LE at rate.
func chime(rate int) []byte {
	n := rate * 6 / 10
	pcm := make([]int16, n)
	for i := range pcm {
		f := 660.0
		if i > n/2 {
			f = 880
		}
		env := math.Min(1, math.Min(float64(i), float64(n-i))/float64(rate/100))
		pcm[i] = int16(6000 * env * math.Sin(2*math.Pi*f*float64(i)/float64(rate)))
	}
	return media.AppendPCM16LE(nil, pcm)
}
