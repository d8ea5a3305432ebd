package speech

import "bytes"

// sniffLen is how many leading bytes detectContainer looks at.
const sniffLen = 64

// detectContainer names the container of an audio file from its first
// bytes, or returns "" for headerless (raw) audio. It recognizes the
// containers the spec lists: wav, mp3, ogg, opus, flac, aac (ADTS), mp4,
// m4a and mkv (also WebM).
func detectContainer(h []byte) string {
	switch {
	case len(h) >= 12 && string(h[0:4]) == "RIFF" && string(h[8:12]) == "WAVE":
		return "wav"
	case len(h) >= 4 && string(h[0:4]) == "fLaC":
		return "flac"
	case len(h) >= 4 && string(h[0:4]) == "OggS":
		if bytes.Contains(h, []byte("OpusHead")) {
			return "opus"
		}
		return "ogg"
	case len(h) >= 4 && bytes.Equal(h[0:4], []byte{0x1A, 0x45, 0xDF, 0xA3}):
		return "mkv"
	case len(h) >= 12 && string(h[4:8]) == "ftyp":
		brand := string(h[8:12])
		if brand == "M4A " || brand == "M4B " {
			return "m4a"
		}
		return "mp4"
	case len(h) >= 3 && string(h[0:3]) == "ID3":
		return "mp3"
	case len(h) >= 2 && h[0] == 0xFF && h[1]&0xF6 == 0xF0:
		return "aac" // ADTS: sync word, layer 00
	case len(h) >= 4 && h[0] == 0xFF && h[1]&0xE0 == 0xE0 && h[1]&0x06 != 0 && h[2]&0xF0 != 0xF0:
		return "mp3" // MPEG audio frame sync with a layer and a valid bit-rate index
	}
	return ""
}
