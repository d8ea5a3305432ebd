package speech

import (
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"unicode/utf8"

	"switchboard/api/httpx"
)

// ttsBody is the JSON body of POST /v1/tts; pointers tell absent from zero.
type ttsBody struct {
	Text                     *string          `json:"text"`
	VoiceID                  *string          `json:"voice_id"`
	Language                 *string          `json:"language"`
	OutputFormat             *ttsOutputFormat `json:"output_format"`
	Speed                    *float64         `json:"speed"`
	OptimizeStreamingLatency *int             `json:"optimize_streaming_latency"`
	TextNormalization        *bool            `json:"text_normalization"`
	WithTimestamps           *bool            `json:"with_timestamps"`
}

type ttsOutputFormat struct {
	Codec      *string `json:"codec"`
	SampleRate *int    `json:"sample_rate"`
	BitRate    *int    `json:"bit_rate"`
}

// timedResponse is the timestamped synthesis envelope.
type timedResponse struct {
	Audio           string          `json:"audio"`
	ContentType     string          `json:"content_type"`
	Duration        float64         `json:"duration"`
	AudioTimestamps timedTimestamps `json:"audio_timestamps"`
}

type timedTimestamps struct {
	GraphChars []string    `json:"graph_chars"`
	GraphTimes []graphTime `json:"graph_times"`
}

// parseTTS validates a POST /v1/tts body into a request and an output
// format; every failure is a 400 naming the field.
func (s *Service) parseTTS(b *ttsBody) (*Request, Format, error) {
	req := &Request{Speed: 1}
	if b.Text == nil || *b.Text == "" {
		return nil, Format{}, httpx.BadRequest("text", "text is required")
	}
	if n := utf8.RuneCountInString(*b.Text); n > s.opts.MaxTextChars {
		return nil, Format{}, httpx.BadRequest("text", "text has %d characters; the limit is %d", n, s.opts.MaxTextChars)
	}
	if _, err := parseTags(*b.Text); err != nil {
		return nil, Format{}, httpx.BadRequest("text", "%v", err)
	}
	req.Text = *b.Text
	voice, err := parseVoice(b.VoiceID, "voice_id")
	if err != nil {
		return nil, Format{}, err
	}
	req.Voice = voice
	tag := ""
	if b.Language != nil {
		tag = *b.Language
	}
	if req.Language, err = s.language(tag, "language"); err != nil {
		return nil, Format{}, err
	}
	f := DefaultFormat
	bitRate := false
	if of := b.OutputFormat; of != nil {
		if of.Codec == nil {
			return nil, Format{}, httpx.BadRequest("output_format.codec", "output_format.codec is required (mp3, wav, pcm, mulaw or alaw)")
		}
		c, ok := parseCodec(*of.Codec)
		if !ok {
			return nil, Format{}, httpx.BadRequest("output_format.codec", "unknown codec %q (mp3, wav, pcm, mulaw or alaw)", *of.Codec)
		}
		f.Codec = c
		if of.SampleRate != nil {
			if !validRate(*of.SampleRate) {
				return nil, Format{}, httpx.BadRequest("output_format.sample_rate", "sample_rate %d is not one of %v", *of.SampleRate, SampleRates)
			}
			f.SampleRate = *of.SampleRate
		}
		if of.BitRate != nil {
			if !slices.Contains(BitRates, *of.BitRate) {
				return nil, Format{}, httpx.BadRequest("output_format.bit_rate", "bit_rate %d is not one of %v", *of.BitRate, BitRates)
			}
			f.BitRate, bitRate = *of.BitRate, true
		}
	}
	if err := checkMP3(&f, bitRate, "output_format.bit_rate"); err != nil {
		return nil, Format{}, err
	}
	req.SampleRate = f.SampleRate
	if b.Speed != nil {
		if *b.Speed < 0.7 || *b.Speed > 1.5 {
			return nil, Format{}, httpx.BadRequest("speed", "speed must be between 0.7 and 1.5")
		}
		req.Speed = *b.Speed
	}
	if v := b.OptimizeStreamingLatency; v != nil && (*v < 0 || *v > 2) {
		return nil, Format{}, httpx.BadRequest("optimize_streaming_latency", "optimize_streaming_latency must be 0, 1 or 2")
	}
	req.Normalize = b.TextNormalization != nil && *b.TextNormalization
	req.Timestamps = b.WithTimestamps != nil && *b.WithTimestamps
	return req, f, nil
}

// parseVoice resolves a voice id (nil or empty: the default voice).
func parseVoice(id *string, param string) (Voice, error) {
	v := ""
	if id != nil {
		v = *id
	}
	voice, ok := LookupVoice(v)
	if !ok {
		return Voice{}, httpx.BadRequest(param, "unknown voice %q; GET /v1/tts/voices lists them", v)
	}
	return voice, nil
}

func (s *Service) handleTTS(w http.ResponseWriter, r *http.Request) error {
	var b ttsBody
	// The text limit is in characters; 4 bytes a character plus JSON
	// escaping and the other fields fit in this bound.
	if err := httpx.Decode(r, int64(s.opts.MaxTextChars)*8+64<<10, &b); err != nil {
		return err
	}
	req, f, err := s.parseTTS(&b)
	if err != nil {
		return err
	}
	a, err := s.tts.Synthesize(r.Context(), req)
	if err != nil {
		return engineError(err)
	}
	out, err := s.enc.Encode(r.Context(), a.PCM, f)
	if err != nil {
		return engineError(err)
	}
	if !req.Timestamps {
		w.Header().Set("Content-Type", f.Codec.ContentType())
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
		return nil
	}
	rs := []rune(req.Text)
	ts := timedTimestamps{GraphChars: make([]string, len(rs)), GraphTimes: make([]graphTime, len(rs))}
	for i, c := range rs {
		ts.GraphChars[i] = string(c)
		if i < len(a.Times) {
			ts.GraphTimes[i] = graphTime(a.Times[i])
		}
	}
	httpx.WriteJSON(w, http.StatusOK, timedResponse{
		Audio:           base64.StdEncoding.EncodeToString(out),
		ContentType:     f.Codec.ContentType(),
		Duration:        round3(a.Duration().Seconds()),
		AudioTimestamps: ts,
	})
	return nil
}

func (s *Service) handleVoices(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, map[string][]Voice{"voices": Voices})
	return nil
}

// engineError maps an engine failure to the API error: tag errors are 400,
// an unavailable engine 503, an upstream 4xx a 400 and other upstream
// answers 502.
func engineError(err error) error {
	var ue *UpstreamError
	var ie *InputError
	switch {
	case errors.As(err, &ie):
		return httpx.BadRequest(ie.Param, "%s", ie.Message)
	case errors.Is(err, errUnknownTag), errors.Is(err, errUnbalancedTag):
		return httpx.BadRequest("text", "%v", err)
	case errors.Is(err, ErrEngineUnavailable), errors.Is(err, ErrToolMissing):
		return httpx.Unavailable(err.Error(), 0)
	case errors.As(err, &ue) && ue.Status/100 == 4:
		return httpx.BadRequest("", "upstream rejected the request: %s", ue.Body)
	case errors.As(err, &ue):
		return &httpx.Error{Status: http.StatusBadGateway, Code: "upstream_error", Message: err.Error()}
	}
	return err
}
