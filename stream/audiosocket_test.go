package stream

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
)

// asBot accepts one AudioSocket connection.
func asBot(t *testing.T) (addr string, conns chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	conns = make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			conns <- c
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l.Addr().String(), conns
}

func asRead(t *testing.T, c net.Conn) (byte, []byte) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	var h [3]byte
	_, err := io.ReadFull(c, h[:])
	require.NoError(t, err)
	p := make([]byte, binary.BigEndian.Uint16(h[1:]))
	_, err = io.ReadFull(c, p)
	require.NoError(t, err)
	return h[0], p
}

func asWrite(t *testing.T, c net.Conn, kind byte, p []byte) {
	t.Helper()
	b := []byte{kind, 0, 0}
	binary.BigEndian.PutUint16(b[1:], uint16(len(p)))
	_, err := c.Write(append(b, p...))
	require.NoError(t, err)
}

// TestAudioSocket: the same stream over Asterisk's AudioSocket framing:
// the call's UUID first, the caller's audio as 16-bit PCM at 8 kHz, keys;
// the bot's audio of any (even) length played; its hangup ends the call.
func TestAudioSocket(t *testing.T) {
	addr, conns := asBot(t)
	ph := newTestPhone(t)
	s := NewService(Options{}).New(ph, call.StreamTarget{URL: "tcp://" + addr, Protocol: ProtocolAudioSocket}, media.Format{}, nil)
	require.NoError(t, s.Prepare(context.Background()))
	c := <-conns
	defer c.Close()
	kind, p := asRead(t, c)
	require.Equal(t, byte(0x01), kind)
	require.Equal(t, uuid.MustParse(ph.id), uuid.UUID(p))

	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	frame := ramp(160, 0)
	s.Audio(frame)
	kind, p = asRead(t, c)
	require.Equal(t, byte(0x10), kind)
	require.Equal(t, media.AppendPCM16LE(nil, media.PCMU.DecodeFrame(nil, frame)), p)
	s.Key(dtmf.Event{Digit: '7'})
	kind, p = asRead(t, c)
	require.Equal(t, byte(0x03), kind)
	require.Equal(t, []byte("7"), p)

	asWrite(t, c, 0x10, make([]byte, 321))
	asWrite(t, c, 0x42, []byte{1})
	pcm := make([]int16, 160)
	for i := range pcm {
		pcm[i] = int16(i * 100)
	}
	asWrite(t, c, 0x10, media.AppendPCM16LE(nil, pcm))
	require.Eventually(t, func() bool { return ph.Pending() == 20*time.Millisecond }, 5*time.Second, time.Millisecond)
	ph.send()
	require.Equal(t, media.PCMU.EncodeFrame(nil, pcm), ph.sentBytes())

	asWrite(t, c, 0x00, nil)
	var he *call.HangupError
	select {
	case err := <-done:
		require.ErrorAs(t, err, &he)
	case <-time.After(5 * time.Second):
		t.Fatal("the bot's hangup did not end the call")
	}
	require.Equal(t, "stream closed by the bot", he.Reason)
	require.NoError(t, s.Close())
	last := ph.notes[len(ph.notes)-1]
	require.Equal(t, map[string]int{refusedAudioSize: 1, refusedUnknownKind: 1}, last.Data.(map[string]any)["refused"])
}

// TestAudioSocketCallerHangsUp: the call's end sends AudioSocket's hangup
// and closes the connection.
func TestAudioSocketCallerHangsUp(t *testing.T) {
	addr, conns := asBot(t)
	ph := newTestPhone(t)
	s := NewService(Options{}).New(ph, call.StreamTarget{URL: "tcp://" + addr, Protocol: ProtocolAudioSocket}, media.Format{}, nil)
	require.NoError(t, s.Prepare(context.Background()))
	c := <-conns
	defer c.Close()
	asRead(t, c)
	stop := running(t, s)
	require.NoError(t, stop())
	require.NoError(t, s.Close())
	kind, p := asRead(t, c)
	require.Equal(t, byte(0x00), kind)
	require.Empty(t, p)
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
}
