package media

// A deferred session's playout changes form when the peer's answer
// settles the wire codec (settle.go): PCM at the session's rate while the
// codec is unknown or wideband, G.711 code words once it is PCMU or PCMA,
// so audio written as code words of the settled law leaves untouched (a
// bridge relays them) and PCM is encoded once, on the way in. The audio
// already queued is converted, not dropped, and keeps its items; writers
// made before follow the new form on their next write (Writer.refresh).

// form is what a playout holds, as a writer sees it.
type form struct {
	codec Codec // the coded queue's law
	coded bool
	rate  int
	gen   int // changes each time the form does
}

func (q *Playout) form() form {
	q.mu.Lock()
	defer q.mu.Unlock()
	return form{codec: q.codec, coded: q.coded != nil, rate: q.rate, gen: q.gen}
}

// recodeTo makes q hold c's code words (c G.711) or, with c zero, PCM at
// rate; what is queued and the filler's loop are converted.
func (q *Playout) recodeTo(c Codec, rate int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if c.IsG711() {
		rate = ClockRate
	}
	if q.coded == nil && !c.IsG711() && q.rate == rate {
		return
	}
	if q.coded != nil && c.IsG711() {
		return // the other law is transcoded by the pacer as it reads
	}
	var pcm []int16
	var m *marks
	if q.coded != nil {
		pcm, m = q.codec.DecodeFrame(nil, q.coded.buf[q.coded.head:]), &q.coded.marks
	} else {
		pcm, m = q.pcm.buf[q.pcm.head:], &q.pcm.marks
	}
	pcm = Convert(pcm, q.rate, rate)
	scale := func(n int) int { return int(int64(n) * int64(rate) / int64(q.rate)) }
	nm := marks{segs: make([]segment, 0, len(m.segs)), cur: m.cur, curPlayed: scale(m.curPlayed), flushed: m.flushed}
	left := len(pcm)
	for i, s := range m.segs {
		n := scale(s.n)
		if i == len(m.segs)-1 || n > left {
			n = left
		}
		left -= n
		if n > 0 {
			nm.segs = append(nm.segs, segment{id: s.id, n: n})
		}
	}
	pcm = pcm[:len(pcm)-left]
	if c.IsG711() {
		nq := newQueue[byte]()
		nq.buf, nq.marks = c.EncodeFrame(nq.buf, pcm), nm
		q.coded, q.pcm, q.codec = nq, nil, c
	} else {
		nq := newQueue[int16]()
		nq.buf, nq.marks = append(nq.buf, pcm...), nm
		q.pcm, q.coded, q.codec = nq, nil, Codec{}
	}
	if f := q.fill; f != nil && f.loop != nil {
		n := len(f.pcm) + len(f.coded)
		nf := q.fillerOf(f.loop)
		if m := len(nf.pcm) + len(nf.coded); n > 0 && m > 0 {
			nf.pos = int(int64(f.pos) * int64(m) / int64(n) % int64(m))
		}
		q.fill = nf
	}
	q.rate = rate
	q.gen++
}
