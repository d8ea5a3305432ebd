package conversation

// inflight is where the results of the bridge's own goroutines (a tool, a
// transfer, a transcription, a handoff) come back to its loop. The loop selects on
// the channel only while one of them runs: a select locks and queues on
// every channel it waits for at each wake-up, and the loop wakes 50 times a
// second for the tick and as often for the model's audio, so an idle
// call's loop waits on the few channels that can speak.
//
// The channel is made at the first start: most calls never run a tool or a
// transfer, and every call would otherwise carry the channels' buffers.
type inflight[T any] struct {
	ch      chan T
	buffer  int
	running int
}

func newInflight[T any](buffer int) inflight[T] {
	return inflight[T]{buffer: buffer}
}

// start counts one more goroutine that will send its result on ch (or give
// up when the call ends); the loop calls it before spawning, so the
// goroutine sees ch made.
func (f *inflight[T]) start() {
	if f.ch == nil {
		f.ch = make(chan T, f.buffer)
	}
	f.running++
}

// wait is ch while a result is due, else nil (a case that never fires).
func (f *inflight[T]) wait() <-chan T {
	if f.running == 0 {
		return nil
	}
	return f.ch
}

// got counts a result received from wait.
func (f *inflight[T]) got() {
	if f.running > 0 {
		f.running--
	}
}
