package stream

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"switchboard/media"
)

// The Twilio Media Streams protocol, as Twilio documents it
// (https://www.twilio.com/docs/voice/media-streams/websocket-messages):
// every message is a JSON text frame with an "event". To the bot:
//
//	{"event":"connected","protocol":"Call","version":"1.0.0"}
//	{"event":"start","sequenceNumber":"1","start":{"accountSid":…,"streamSid":…,"callSid":…,
//	  "tracks":["inbound"],"customParameters":{…},"mediaFormat":{"encoding":"audio/x-mulaw",
//	  "sampleRate":8000,"channels":1}},"streamSid":…}
//	{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1",
//	  "timestamp":"5","payload":"<base64 µ-law>"},"streamSid":…}
//	{"event":"dtmf","streamSid":…,"sequenceNumber":"5","dtmf":{"track":"inbound_track","digit":"1"}}
//	{"event":"mark","sequenceNumber":"4","streamSid":…,"mark":{"name":…}}
//	{"event":"stop","sequenceNumber":"5","streamSid":…,"stop":{"accountSid":…,"callSid":…}}
//
// sequenceNumber counts every message but connected from "1"; chunk
// counts a track's media messages from "1"; timestamp is the ms since
// the stream started. From the bot: media {"media":{"payload":…}} (µ-law
// 8 kHz, any size), mark {"mark":{"name":…}} and clear; streamSid, when
// present, must be the stream's.

// startInfo is what the start message says of the stream.
type startInfo struct {
	streamSid, accountSid, callSid string
	tracks                         []string
	parameters                     map[string]string
}

// twilioWire speaks the protocol over a WebSocket.
type twilioWire struct {
	conn    *websocket.Conn
	info    startInfo
	timeout time.Duration

	// The writer's state.
	seq    int
	chunks [2]int // media messages of the inbound and outbound tracks
	wbuf   []byte
	// The reader's state.
	rbuf bytes.Buffer
	pbuf []byte
	in   twilioView
}

func newTwilioWire(conn *websocket.Conn, info startInfo, o Options) *twilioWire {
	conn.SetReadLimit(o.MaxMessage)
	return &twilioWire{conn: conn, info: info, timeout: o.WriteTimeout}
}

func (t *twilioWire) format() media.Format { return media.FormatPCMU }

// twilioStart is the start message.
type twilioStart struct {
	Event          string        `json:"event"`
	SequenceNumber string        `json:"sequenceNumber"`
	Start          twilioStartIn `json:"start"`
	StreamSid      string        `json:"streamSid"`
}

type twilioStartIn struct {
	AccountSid       string            `json:"accountSid"`
	StreamSid        string            `json:"streamSid"`
	CallSid          string            `json:"callSid"`
	Tracks           []string          `json:"tracks"`
	CustomParameters map[string]string `json:"customParameters"`
	MediaFormat      twilioFormat      `json:"mediaFormat"`
}

type twilioFormat struct {
	Encoding   string `json:"encoding"`
	SampleRate int    `json:"sampleRate"`
	Channels   int    `json:"channels"`
}

func (t *twilioWire) hello() error {
	if err := t.send([]byte(`{"event":"connected","protocol":"Call","version":"1.0.0"}`)); err != nil {
		return err
	}
	t.seq++
	params := t.info.parameters
	if params == nil {
		params = map[string]string{}
	}
	b, err := json.Marshal(twilioStart{Event: "start", SequenceNumber: strconv.Itoa(t.seq), StreamSid: t.info.streamSid,
		Start: twilioStartIn{AccountSid: t.info.accountSid, StreamSid: t.info.streamSid, CallSid: t.info.callSid,
			Tracks: t.info.tracks, CustomParameters: params,
			MediaFormat: twilioFormat{Encoding: "audio/x-mulaw", SampleRate: media.ClockRate, Channels: 1}}})
	if err != nil {
		return err
	}
	return t.send(b)
}

func (t *twilioWire) write(m *outMsg) error {
	t.seq++
	b := append(t.wbuf[:0], `{"event":"`...)
	switch m.kind {
	case outMedia:
		c := &t.chunks[0]
		if m.track == trackOutbound {
			c = &t.chunks[1]
		}
		*c++
		b = append(b, `media","sequenceNumber":"`...)
		b = strconv.AppendInt(b, int64(t.seq), 10)
		b = append(b, `","media":{"track":"`...)
		b = append(b, m.track...)
		b = append(b, `","chunk":"`...)
		b = strconv.AppendInt(b, int64(*c), 10)
		b = append(b, `","timestamp":"`...)
		b = strconv.AppendInt(b, m.at, 10)
		b = append(b, `","payload":"`...)
		b = base64.StdEncoding.AppendEncode(b, *m.buf)
		b = append(b, `"},"streamSid":"`...)
		b = append(b, t.info.streamSid...)
		b = append(b, `"}`...)
	case outDTMF:
		b = append(b, `dtmf","streamSid":"`...)
		b = append(b, t.info.streamSid...)
		b = append(b, `","sequenceNumber":"`...)
		b = strconv.AppendInt(b, int64(t.seq), 10)
		b = append(b, `","dtmf":{"track":"inbound_track","digit":"`...)
		b = append(b, m.digit)
		b = append(b, `"}}`...)
	case outMark:
		b = append(b, `mark","sequenceNumber":"`...)
		b = strconv.AppendInt(b, int64(t.seq), 10)
		b = append(b, `","streamSid":"`...)
		b = append(b, t.info.streamSid...)
		b = append(b, `","mark":{"name":`...)
		b = appendJSONString(b, m.name)
		b = append(b, `}}`...)
	case outStop:
		b = append(b, `stop","sequenceNumber":"`...)
		b = strconv.AppendInt(b, int64(t.seq), 10)
		b = append(b, `","streamSid":"`...)
		b = append(b, t.info.streamSid...)
		b = append(b, `","stop":{"accountSid":`...)
		b = appendJSONString(b, t.info.accountSid)
		b = append(b, `,"callSid":`...)
		b = appendJSONString(b, t.info.callSid)
		b = append(b, `}}`...)
	}
	t.wbuf = b
	return t.send(b)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

func (t *twilioWire) send(b []byte) error {
	if err := t.conn.SetWriteDeadline(time.Now().Add(t.timeout)); err != nil {
		return err
	}
	return t.conn.WriteMessage(websocket.TextMessage, b)
}

func (t *twilioWire) read() (inMsg, error) {
	typ, r, err := t.conn.NextReader()
	if err != nil {
		return inMsg{}, err
	}
	t.rbuf.Reset()
	if _, err := t.rbuf.ReadFrom(r); err != nil {
		return inMsg{}, err
	}
	if typ != websocket.TextMessage {
		return inMsg{}, refuse(refusedBinary, "a binary frame of %d bytes (messages are JSON text)", t.rbuf.Len())
	}
	m := &t.in
	if err := decodeTwilio(t.rbuf.Bytes(), m); err != nil {
		return inMsg{}, refuse(refusedInvalidJSON, "%v", err)
	}
	if len(m.streamSid) > 0 && string(m.streamSid) != t.info.streamSid {
		return inMsg{}, refuse(refusedStreamSid, "streamSid %q is not this stream's", clip(string(m.streamSid)))
	}
	switch string(m.event) {
	case "media":
		if !m.hasMedia || len(m.payload) == 0 {
			return inMsg{}, refuse(refusedNoPayload, "a media message without media.payload")
		}
		p := bytes.TrimRight(m.payload, "=")
		n := base64.RawStdEncoding.DecodedLen(len(p))
		if cap(t.pbuf) < n {
			t.pbuf = make([]byte, n)
		}
		n, err := base64.RawStdEncoding.Decode(t.pbuf[:n], p)
		if err != nil {
			return inMsg{}, refuse(refusedBadBase64, "media.payload is not base64: %v", err)
		}
		if n == 0 {
			return inMsg{}, refuse(refusedNoPayload, "media.payload holds no audio")
		}
		return inMsg{kind: inMedia, payload: t.pbuf[:n]}, nil
	case "mark":
		if !m.hasMark || len(m.name) == 0 {
			return inMsg{}, refuse(refusedNoMarkName, "a mark message without mark.name")
		}
		return inMsg{kind: inMark, name: string(m.name)}, nil
	case "clear":
		return inMsg{kind: inClear}, nil
	case "":
		return inMsg{}, refuse(refusedUnknownEvent, "a message without an event")
	}
	return inMsg{}, refuse(refusedUnknownEvent, "event %q is not one a bot sends (media, mark, clear)", clip(string(m.event)))
}

// clip bounds a string from the bot quoted in a note or a log.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func (t *twilioWire) close(reason string) error {
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, clip(reason))
	_ = t.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(t.timeout))
	return t.conn.Close()
}
