package realtime

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeltaDecoderReusesMemory: the session reader's decoding of an audio
// delta equals Decode's, its event and audio memory are reused once
// released, and the strings of earlier events stay intact (a receiver may
// keep them).
func TestDeltaDecoderReusesMemory(t *testing.T) {
	var d deltaDecoder
	var kept []string
	var want []string
	for i := range 500 { // more event ids than one block holds
		in := appendAudioDelta(nil, &ResponseOutputAudioDelta{Header: Header{EventID: fmt.Sprintf("event_%04d", i)},
			ResponseID: fmt.Sprintf("resp_%d", i/100), ItemID: fmt.Sprintf("item_%d", i/50), OutputIndex: i % 3, ContentIndex: 1,
			Delta: []byte{byte(i), byte(i >> 8), 7}})
		got, err := d.decode(in)
		require.NoError(t, err)
		ref, err := Decode(in)
		require.NoError(t, err)
		g := got.(*ResponseOutputAudioDelta)
		require.True(t, g.pooled)
		g2 := *g
		g2.pooled = false
		require.Equal(t, ref, &g2)
		kept = append(kept, g.EventID, g.ItemID, g.ResponseID)
		want = append(want, fmt.Sprintf("event_%04d", i), fmt.Sprintf("item_%d", i/50), fmt.Sprintf("resp_%d", i/100))
		Release(got)
		Release(got) // a second release of the same event is ignored
	}
	require.Equal(t, want, kept, "strings made earlier are never overwritten")

	// A delta of another shape (an escaped id) is decoded the general way,
	// and other events are untouched by Release.
	e, err := d.decode([]byte(`{"type":"response.output_audio.delta","item_id":"it\u0065m","delta":"AAE="}`))
	require.NoError(t, err)
	require.False(t, e.(*ResponseOutputAudioDelta).pooled)
	require.Equal(t, "item", e.(*ResponseOutputAudioDelta).ItemID)
	u, err := d.decode([]byte(`{"type":"x.custom","a":1}`))
	require.NoError(t, err)
	Release(u)
	require.Equal(t, `{"type":"x.custom","a":1}`, string(u.(*Unknown).Raw))
}

// BenchmarkSessionDecodeAudioDelta100ms is the session reader's decoding
// of a 100 ms PCM16 delta, released by its receiver: no allocation.
func BenchmarkSessionDecodeAudioDelta100ms(b *testing.B) {
	var d deltaDecoder
	ins := make([][]byte, 16)
	for i := range ins {
		ins[i] = appendAudioDelta(nil, &ResponseOutputAudioDelta{Header: Header{EventID: fmt.Sprintf("event_%022d", i)},
			ResponseID: "resp_1", ItemID: "item_1", Delta: make([]byte, 4800)})
	}
	b.SetBytes(4800)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e, err := d.decode(ins[i%len(ins)])
		if err != nil {
			b.Fatal(err)
		}
		Release(e)
		i++
	}
}
