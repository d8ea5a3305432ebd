package recording

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/webhook"
)

// File name suffixes of plain and sealed recordings.
const (
	plainExt  = ".wav"
	sealedExt = ".wav.sealed"
)

// KeyPurpose names the key derived from the master key for recordings.
const KeyPurpose = "recordings"

// Errors of Open and Delete.
var (
	// ErrNotFound means the call has no recording.
	ErrNotFound = errors.New("recording: no recording of this call")
	// ErrInProgress means the recording is still being written.
	ErrInProgress = errors.New("recording: the call is still being recorded")
)

// Webhooks deliver realtime.call.recording_ready (webhook.Dispatcher).
type Webhooks interface {
	DeliverAsync(t webhook.Target, ev webhook.Event, done func(webhook.Result, error)) error
}

// Options configure a Service.
type Options struct {
	// Dir holds the recordings (made 0700 when missing).
	Dir string
	// Retention removes recordings older than this; 0 keeps them.
	Retention time.Duration
	// Key, when set (32 bytes), seals recordings at rest.
	Key []byte
	// Webhooks, when set, get realtime.call.recording_ready for webhook
	// numbers.
	Webhooks Webhooks
	// Registerer takes the recording metrics (may be nil).
	Registerer prometheus.Registerer
	Log        zerolog.Logger
}

// Service owns the recordings directory (a call.Recorder).
type Service struct {
	opts    Options
	aead    cipher.AEAD
	metrics *metrics
	log     zerolog.Logger

	mu     sync.Mutex
	active map[string]*Recording
	wg     sync.WaitGroup
}

var _ call.Recorder = (*Service)(nil)

type metrics struct {
	active  prometheus.Gauge
	dropped prometheus.Counter
	done    *prometheus.CounterVec
	removed prometheus.Counter
}

// New returns the recordings service over opts.Dir.
func New(opts Options) (*Service, error) {
	if opts.Dir == "" {
		return nil, errors.New("recording: no directory")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	s := &Service{opts: opts, log: opts.Log, active: map[string]*Recording{}, metrics: &metrics{
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchboard_recordings_active", Help: "Calls being recorded now."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_recording_dropped_frames_total",
			Help: "Frames a recording dropped because its writer fell behind (the file has silence there)."}),
		done: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_recordings_total",
			Help: "Recordings finished, by result (ok, error)."}, []string{"result"}),
		removed: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_recordings_removed_total",
			Help: "Recordings removed by the retention or DELETE."}),
	}}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(s.metrics.active, s.metrics.dropped, s.metrics.done, s.metrics.removed)
	}
	if opts.Key != nil {
		var err error
		if s.aead, err = newAEAD(opts.Key); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// validID keeps path elements out of file names: call ids are UUIDs.
func validID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil && len(id) == 36 && !strings.ContainsAny(id, `/\.`)
}

func (s *Service) paths(id string) (plain, sealed string) {
	return filepath.Join(s.opts.Dir, id+plainExt), filepath.Join(s.opts.Dir, id+sealedExt)
}

// Start begins recording the call on p (call.Recorder).
func (s *Service) Start(p call.Phone, redact bool) (call.Recording, error) {
	id := p.ID()
	if !validID(id) {
		return nil, fmt.Errorf("recording: call id %q is not a UUID", id)
	}
	plain, sealed := s.paths(id)
	path := plain
	if s.aead != nil {
		path = sealed
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%w: %s", errExists, path)
	}
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	var out sink
	if s.aead != nil {
		out, err = newSealedWriter(f, s.aead, id, rate, channels, chunkSize)
	} else {
		out, err = newPlainWriter(f)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	r := &Recording{svc: s, id: id, phone: p, log: p.Logger(), path: path, file: f, out: out, redact: redact,
		q: make(chan qframe, queueLen), stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	s.active[id] = r
	s.mu.Unlock()
	s.metrics.active.Inc()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		r.run()
	}()
	return r, nil
}

// finished runs on the writer goroutine once the file is closed.
func (s *Service) finished(r *Recording) {
	s.mu.Lock()
	delete(s.active, r.id)
	s.mu.Unlock()
	s.metrics.active.Dec()
	result := "ok"
	if r.err != nil {
		result = "error"
	}
	s.metrics.done.WithLabelValues(result).Inc()
	fi, _ := os.Stat(r.path)
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	r.log.Info().Str("path", r.path).Dur("duration", r.Duration()).Uint64("dropped_frames", r.drops.Load()).Msg("recording finished")
	route := r.phone.Route()
	if s.opts.Webhooks == nil || route.Webhook == nil || r.err != nil {
		return
	}
	w := route.Webhook
	t := webhook.Target{ID: w.ID, URL: w.URL, SigningSecret: w.SigningSecret, AuthToken: w.AuthToken, AuthURL: w.AuthURL}
	ev := webhook.NewEvent(webhook.TypeCallRecordingReady, time.Now(), webhook.CallRecordingReady{CallID: r.id,
		PhoneNumberID: route.NumberID, URL: "/v1/calls/" + r.id + "/recording", ContentType: "audio/wav",
		DurationMS: r.Duration().Milliseconds(), Bytes: size, Encrypted: s.aead != nil})
	log := r.log
	if err := s.opts.Webhooks.DeliverAsync(t, ev, func(res webhook.Result, err error) {
		// The call's record is stored by now: the outcome goes to the log.
		log.Info().Str("event_type", ev.Type).Bool("delivered", res.Delivered).Int("attempts", len(res.Attempts)).AnErr("error", err).
			Msg("recording_ready webhook")
	}); err != nil {
		r.log.Warn().Err(err).Msg("recording_ready webhook not queued")
	}
}

// File is an opened recording: a WAV file to serve.
type File struct {
	io.ReadSeeker
	ModTime time.Time
	closer  io.Closer
}

// Close releases the file.
func (f *File) Close() error { return f.closer.Close() }

// Open opens the recording of call id as a WAV file (decrypted when it
// is sealed). A recording in progress opens as far as it is written.
func (s *Service) Open(id string) (*File, error) {
	if !validID(id) {
		return nil, ErrNotFound
	}
	plain, sealed := s.paths(id)
	if f, err := os.Open(plain); err == nil {
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		return &File{ReadSeeker: f, ModTime: fi.ModTime(), closer: f}, nil
	}
	f, err := os.Open(sealed)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("open recording: %w", err)
	}
	if s.aead == nil {
		f.Close()
		return nil, fmt.Errorf("open recording: %s is sealed and recording encryption is off (the master key still opens it when recording.encrypt is set)", id)
	}
	r, err := openSealed(f, s.aead, id)
	if err != nil {
		f.Close()
		return nil, err
	}
	fi, _ := f.Stat()
	return &File{ReadSeeker: r, ModTime: fi.ModTime(), closer: f}, nil
}

// Delete removes the recording of call id; ErrInProgress while it is
// written.
func (s *Service) Delete(id string) error {
	if !validID(id) {
		return ErrNotFound
	}
	s.mu.Lock()
	_, live := s.active[id]
	s.mu.Unlock()
	if live {
		return ErrInProgress
	}
	plain, sealed := s.paths(id)
	found := false
	for _, p := range []string{plain, sealed} {
		err := os.Remove(p)
		if err == nil {
			found = true
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete recording: %w", err)
		}
	}
	if !found {
		return ErrNotFound
	}
	s.metrics.removed.Inc()
	return nil
}

// Exists reports whether call id has a recording.
func (s *Service) Exists(id string) bool {
	if !validID(id) {
		return false
	}
	plain, sealed := s.paths(id)
	for _, p := range []string{plain, sealed} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// Run removes recordings past the retention until ctx ends (nothing to do
// with a zero retention).
func (s *Service) Run(ctx context.Context) {
	if s.opts.Retention <= 0 {
		return
	}
	every := min(max(s.opts.Retention/4, time.Second), time.Hour)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.Sweep(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep removes the finished recordings last written before now minus the
// retention.
func (s *Service) Sweep(now time.Time) {
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		s.log.Warn().Err(err).Msg("recording retention: read dir")
		return
	}
	for _, e := range entries {
		name := e.Name()
		id := strings.TrimSuffix(strings.TrimSuffix(name, sealedExt), plainExt)
		if id == name || !validID(id) {
			continue
		}
		s.mu.Lock()
		_, live := s.active[id]
		s.mu.Unlock()
		fi, err := e.Info()
		if live || err != nil || now.Sub(fi.ModTime()) < s.opts.Retention {
			continue
		}
		if err := os.Remove(filepath.Join(s.opts.Dir, name)); err == nil {
			s.metrics.removed.Inc()
			s.log.Info().Str("call_id", id).Msg("recording removed after the retention")
		}
	}
}

// Wait blocks until every writer has finished.
func (s *Service) Wait() { s.wg.Wait() }
