package call

import (
	"context"
	"time"
)

// Echo is the line-test conversation: the caller hears their own audio
// after a fixed delay. It checks a deployment end to end (SIP, RTP both
// ways, both resamplers, the pacer) without any model.
type Echo struct {
	delay time.Duration
	queue chan echoFrame
	free  chan []byte
}

type echoFrame struct {
	at  time.Time
	pcm []byte
}

// NewEcho returns an echo conversation with the given delay (default
// 500 ms).
func NewEcho(delay time.Duration) *Echo {
	if delay <= 0 {
		delay = 500 * time.Millisecond
	}
	// Room for the delay plus one second of 10 ms frames.
	n := int((delay+time.Second)/(10*time.Millisecond)) + 1
	e := &Echo{delay: delay, queue: make(chan echoFrame, n), free: make(chan []byte, n)}
	return e
}

// Prepare is immediate: the echo needs nothing before answer.
func (e *Echo) Prepare(context.Context) error { return nil }

// Audio queues a copy of the frame; when the queue is full the frame is
// dropped rather than blocking the media goroutine.
func (e *Echo) Audio(pcm []byte) {
	var buf []byte
	select {
	case buf = <-e.free:
	default:
	}
	buf = append(buf[:0], pcm...)
	select {
	case e.queue <- echoFrame{at: time.Now(), pcm: buf}:
	default:
	}
}

// Run plays each frame back once it is delay old.
func (e *Echo) Run(ctx context.Context, p Phone) error {
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		var f echoFrame
		select {
		case <-ctx.Done():
			return nil
		case f = <-e.queue:
		}
		if wait := time.Until(f.at.Add(e.delay)); wait > 0 {
			t.Reset(wait)
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
		p.Play("echo", f.pcm)
		select {
		case e.free <- f.pcm:
		default:
		}
	}
}

// Close releases nothing: the echo owns no resources.
func (e *Echo) Close() error { return nil }
