package transfer

import "testing"

// BenchmarkMusic is the cost of rendering the hold music, paid at its
// first use since the service renders it lazily.
func BenchmarkMusic(b *testing.B) {
	for b.Loop() {
		Music(musicRate)
	}
}
