package speech

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"switchboard/api/httpx"
)

// maxFieldBytes bounds one non-file form field.
const maxFieldBytes = 8 << 10

// Form fields of POST /v1/stt.
var sttFields = []string{"url", "audio_format", "sample_rate", "sample_rate_hertz", "language", "format",
	"multichannel", "channels", "diarize", "keyterm", "filler_words"}

var (
	rawFormats       = []string{"pcm", "mulaw", "alaw"}
	containerFormats = []string{"wav", "mp3", "ogg", "opus", "flac", "aac", "mp4", "m4a", "mkv"}
)

// sttForm is a parsed, validated POST /v1/stt request.
type sttForm struct {
	fields     []Field
	values     map[string]string
	keyterms   int
	file       *os.File
	fileSize   int64
	container  string
	fileHeader []byte
}

func (f *sttForm) has(name string) bool { _, ok := f.values[name]; return ok }

func (f *sttForm) bool(name string) (bool, error) {
	v, ok := f.values[name]
	if !ok {
		return false, nil
	}
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, httpx.BadRequest(name, "%s must be true or false", name)
}

// readSTTForm streams the multipart body: fields are kept, the file part
// (which must be last) is copied to a temporary file, never held in
// memory. The caller removes the file.
func (s *Service) readSTTForm(w http.ResponseWriter, r *http.Request) (*sttForm, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return nil, &httpx.Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Message: "the body must be multipart/form-data"}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxUploadBytes+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, httpx.BadRequest("", "invalid multipart body: %v", err)
	}
	f := &sttForm{values: map[string]string{}}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return f, bodyError(err)
		}
		name := part.FormName()
		if f.file != nil {
			return f, httpx.BadRequest("file", "the file part must be the last field (found %q after it)", name)
		}
		if name == "file" {
			if err := s.spool(f, part); err != nil {
				return f, err
			}
			continue
		}
		if !slices.Contains(sttFields, name) {
			return f, httpx.BadRequest(name, "unknown field %q", name)
		}
		b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
		if err != nil {
			return f, bodyError(err)
		}
		if len(b) > maxFieldBytes {
			return f, httpx.BadRequest(name, "field %s is longer than %d bytes", name, maxFieldBytes)
		}
		v := string(b)
		if name == "keyterm" {
			f.keyterms++
			if f.keyterms > 100 {
				return f, httpx.BadRequest("keyterm", "at most 100 keyterm values are allowed")
			}
			if n := utf8.RuneCountInString(v); n == 0 || n > 50 {
				return f, httpx.BadRequest("keyterm", "each keyterm must have 1 to 50 characters (got %d)", n)
			}
		} else if f.has(name) {
			return f, httpx.BadRequest(name, "field %s is given twice", name)
		}
		f.values[name] = v
		f.fields = append(f.fields, Field{Name: name, Value: v})
	}
	return f, nil
}

// spool copies the file part to disk within the upload limit.
func (s *Service) spool(f *sttForm, part io.Reader) error {
	tmp, err := os.CreateTemp(s.opts.TempDir, "stt-upload-*")
	if err != nil {
		return fmt.Errorf("spool upload: %w", err)
	}
	f.file = tmp
	n, err := io.Copy(tmp, io.LimitReader(part, s.opts.MaxUploadBytes+1))
	f.fileSize = n
	if err != nil {
		return bodyError(err)
	}
	if n > s.opts.MaxUploadBytes {
		return &httpx.Error{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large", Param: "file",
			Message: fmt.Sprintf("the file is larger than %d bytes", s.opts.MaxUploadBytes)}
	}
	h := make([]byte, sniffLen)
	k, _ := tmp.ReadAt(h, 0)
	f.fileHeader = h[:k]
	f.container = detectContainer(f.fileHeader)
	return nil
}

func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &httpx.Error{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large", Param: "file", Message: "the body is larger than the upload limit"}
	}
	return httpx.BadRequest("", "could not read the multipart body: %v", err)
}

// validate applies the spec's rules to a read form.
func (f *sttForm) validate() error {
	u, hasURL := f.values["url"]
	switch {
	case f.file != nil && hasURL:
		return httpx.BadRequest("url", "give either file or url, not both")
	case f.file == nil && !hasURL:
		return httpx.BadRequest("file", "either file or url is required")
	case hasURL:
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return httpx.BadRequest("url", "url must be an http or https URL")
		}
	}
	for _, b := range []string{"format", "multichannel", "diarize", "filler_words"} {
		if _, err := f.bool(b); err != nil {
			return err
		}
	}
	af, hasAF := f.values["audio_format"]
	if hasAF && !slices.Contains(rawFormats, af) && !slices.Contains(containerFormats, af) {
		return httpx.BadRequest("audio_format", "audio_format %q is not one of %v", af, append(append([]string{}, rawFormats...), containerFormats...))
	}
	rateParam := ""
	for _, n := range []string{"sample_rate", "sample_rate_hertz"} {
		if v, ok := f.values[n]; ok {
			if rateParam != "" {
				return httpx.BadRequest(n, "give sample_rate or sample_rate_hertz, not both")
			}
			rateParam = n
			r, err := strconv.Atoi(v)
			if err != nil || !validRate(r) {
				return httpx.BadRequest(n, "%s must be one of %v", n, SampleRates)
			}
		}
	}
	multi, _ := f.bool("multichannel")
	if v, ok := f.values["channels"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 8 {
			return httpx.BadRequest("channels", "channels must be an integer from 2 to 8")
		}
		if multi && n < 2 {
			return httpx.BadRequest("channels", "multichannel audio needs channels from 2 to 8")
		}
	}
	if format, _ := f.bool("format"); format && f.values["language"] == "" {
		return httpx.BadRequest("language", "format=true requires language")
	}
	raw := false
	if f.file != nil {
		if f.fileSize == 0 {
			return httpx.BadRequest("file", "the file is empty")
		}
		if f.container != "" {
			if hasAF {
				return httpx.BadRequest("audio_format", "audio_format must not be set for containers (the file is %s)", f.container)
			}
		} else {
			if !hasAF {
				return httpx.BadRequest("audio_format", "the file has no container header: raw audio needs audio_format (pcm, mulaw or alaw) and sample_rate")
			}
			if !slices.Contains(rawFormats, af) {
				return httpx.BadRequest("audio_format", "the file is not %s: no %s header found; raw audio must be pcm, mulaw or alaw", af, af)
			}
			raw = true
		}
	} else if hasAF && slices.Contains(rawFormats, af) {
		raw = true
	}
	if raw {
		if rateParam == "" {
			return httpx.BadRequest("sample_rate", "raw %s audio needs sample_rate", af)
		}
		if multi && !f.has("channels") {
			return httpx.BadRequest("channels", "multichannel raw audio needs channels (2 to 8)")
		}
	}
	return nil
}

func (s *Service) handleSTT(w http.ResponseWriter, r *http.Request) error {
	f, err := s.readSTTForm(w, r)
	if f != nil && f.file != nil {
		defer func() {
			_ = f.file.Close()
			_ = os.Remove(f.file.Name())
		}()
	}
	if err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	if s.stt == nil {
		return errNoSTT()
	}
	req := &STTRequest{Fields: f.fields, URL: f.values["url"]}
	if f.file != nil {
		req.File, req.FileSize = f.file, f.fileSize
	}
	t, err := s.stt.Transcribe(r.Context(), req)
	if err != nil {
		return engineError(err)
	}
	t.round()
	httpx.WriteJSON(w, http.StatusOK, t)
	return nil
}

func errNoSTT() error {
	return httpx.Unavailable("no speech-to-text engine is configured: set the stt engine to pocketsphinx (local) or to upstream with an upstream URL and key", 0)
}
