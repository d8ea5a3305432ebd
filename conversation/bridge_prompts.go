package conversation

import (
	"context"
	"sync/atomic"
	"time"
)

// prompt is a sentence the appliance says itself during a call (comfort
// prompt, transfer announcement), rendered by the Greeter (from its cache)
// in the background so the Run goroutine never waits for TTS.
type prompt struct {
	text string
	pcm  atomic.Pointer[[]byte]
	done chan struct{} // closed once rendering ended, rendered or not
}

// ready is the rendered audio, nil while rendering or when it failed (and
// for a nil prompt).
func (p *prompt) ready() []byte {
	if p == nil {
		return nil
	}
	if v := p.pcm.Load(); v != nil {
		return *v
	}
	return nil
}

// settled reports whether rendering ended.
func (p *prompt) settled() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// promptRenderTimeout bounds the rendering of a call's prompts; a prompt
// not rendered by then is skipped (the comfort tone, the REFER go on).
const promptRenderTimeout = 5 * time.Second

// renderPrompts starts rendering the comfort prompt and, for an agent with
// transfer targets, the transfer announcement. Without a Greeter there are
// none: the comfort tone alone fills a wait, and the REFER goes at once.
func (b *bridge) renderPrompts(ctx context.Context) {
	g := b.rt.opts.Greeter
	if g == nil {
		return
	}
	st := &b.cfg.Settings
	var ps []*prompt
	if text := st.ComfortText(); text != "" {
		b.tools.prompt = &prompt{text: text, done: make(chan struct{})}
		ps = append(ps, b.tools.prompt)
	}
	if text := st.AnnouncementText(); text != "" && len(st.TransferTargets) > 0 {
		b.transfer.announce = &prompt{text: text, done: make(chan struct{})}
		ps = append(ps, b.transfer.announce)
	}
	if len(ps) == 0 {
		return
	}
	voice, rate := st.Voice, b.format.Rate
	b.spawn("prompts", func() {
		rctx, cancel := context.WithTimeout(ctx, promptRenderTimeout)
		defer cancel()
		for _, p := range ps {
			pcm, err := g.Render(rctx, p.text, voice, rate)
			if err != nil {
				b.log.Warn().Err(err).Str("prompt", p.text).Msg("prompt not rendered")
			} else {
				p.pcm.Store(&pcm)
				b.log.Debug().Str("prompt", p.text).Msg("prompt rendered")
			}
			close(p.done)
		}
	})
}
