package realtime

import (
	"bytes"
	"strings"
	"sync"
)

// deltaDecoder decodes the events a session reads from its provider. The
// per-frame one, response.output_audio.delta (50 a second per call),
// costs no allocation in steady state:
//
//   - the event comes from a pool, and its audio is decoded into the
//     memory its last use left it; the receiver hands it back with
//     Release once it has played the audio;
//   - the response and item ids repeat from one delta to the next and are
//     made once; an event id is copied into a block of memory shared with
//     the next ones (one allocation per block, not per id). A string, once
//     made, is never written again, so the receiver may keep any of them.
//
// Every other event, and a delta whose shape the fast path does not know,
// is decoded by DecodeLenient. A deltaDecoder belongs to one reader.
type deltaDecoder struct {
	strs       strings.Builder
	resp, item string
}

// stringBlock is the size of the blocks event ids are copied into.
const stringBlock = 4096

// maxPooledDelta is the largest audio buffer a released delta keeps.
const maxPooledDelta = 64 << 10

var deltaPool = sync.Pool{New: func() any { return new(ResponseOutputAudioDelta) }}

// decode decodes one message.
func (d *deltaDecoder) decode(b []byte) (Event, error) {
	if bytes.HasPrefix(b, prefixAudioDelta) {
		e := NewAudioDelta()
		if decodeAudioDeltaInto(b, e, d.str) {
			return e, nil
		}
		Release(e)
	}
	return DecodeLenient(b)
}

// str makes the string of a plain JSON string value of field.
func (d *deltaDecoder) str(field byte, val []byte) (string, bool) {
	end, plain, ok := scanString(val, 0)
	if len(val) < 2 || val[0] != '"' || !ok || !plain || end != len(val) {
		return "", false
	}
	raw := val[1 : len(val)-1]
	switch field {
	case fieldResponseID:
		if string(raw) != d.resp {
			d.resp = d.make(raw)
		}
		return d.resp, true
	case fieldItemID:
		if string(raw) != d.item {
			d.item = d.make(raw)
		}
		return d.item, true
	}
	return d.make(raw), true
}

// make copies raw into the current block and returns it as a string.
func (d *deltaDecoder) make(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if d.strs.Cap()-d.strs.Len() < len(raw) {
		d.strs = strings.Builder{}
		d.strs.Grow(max(stringBlock, len(raw)))
	}
	n := d.strs.Len()
	d.strs.Write(raw)
	return d.strs.String()[n:]
}

// NewAudioDelta returns an audio delta event from the pool that Release
// refills: its Delta is empty, with the memory of an earlier delta to
// append to. An engine that makes deltas of its own audio (the echo
// engine) so reuses their memory once its receiver releases them.
func NewAudioDelta() *ResponseOutputAudioDelta {
	e := deltaPool.Get().(*ResponseOutputAudioDelta)
	*e = ResponseOutputAudioDelta{Delta: e.Delta[:0], pooled: true}
	return e
}

// Release hands back an event a Session delivered, once its receiver is
// done with it: an audio delta's memory then serves a later delta instead
// of becoming garbage. The receiver must not use the event or its Delta
// bytes afterwards (its strings it may keep), and releases an event once.
// Releasing is optional: an event not released is collected as any other;
// Release of any other event does nothing.
func Release(e Event) {
	d, ok := e.(*ResponseOutputAudioDelta)
	if !ok || !d.pooled {
		return
	}
	delta := d.Delta[:0]
	if cap(delta) > maxPooledDelta {
		delta = nil
	}
	*d = ResponseOutputAudioDelta{Delta: delta}
	deltaPool.Put(d)
}
