package amd

import (
	"encoding/binary"
	"testing"
)

// FuzzFrame feeds any audio, in frames of any length, and checks the
// detector's contract: one classification at most, and a machine's end
// (beep, silence, timeout) only after a machine was found.
func FuzzFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0x10, 0x27, 0xf0, 0xd8}, uint8(160))
	f.Add(make([]byte, 8000), uint8(7))
	f.Fuzz(func(t *testing.T, raw []byte, frame uint8) {
		pcm := make([]int16, len(raw)/2)
		for i := range pcm {
			pcm[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
		}
		n := int(frame)%400 + 1
		d := New(Options{InitialSilence: 200 * Block, MaxGreeting: 50 * Block})
		classified, machine := 0, false
		for len(pcm) > 0 {
			k := min(n, len(pcm))
			switch ev := d.Frame(pcm[:k]); ev {
			case Human, Unknown, Machine:
				classified++
				machine = ev == Machine
			case Beep, Silence, Timeout:
				if !machine {
					t.Fatalf("%s before a machine was found", ev)
				}
			}
			pcm = pcm[k:]
		}
		if classified > 1 {
			t.Fatalf("classified %d times", classified)
		}
	})
}
