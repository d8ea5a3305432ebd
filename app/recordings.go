package app

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"switchboard/config"
	"switchboard/recording"
	"switchboard/records"
)

// buildRecordings opens the recordings directory (recording.dir, or
// recordings/ in the data directory), sealed under a key derived from the
// master key when recording.encrypt asks.
func (a *App) buildRecordings(cfg *config.Config, log zerolog.Logger) error {
	dir := cfg.Recording.Dir
	if dir == "" {
		dir = filepath.Join(cfg.DataDir, "recordings")
	}
	opts := recording.Options{Dir: dir, Retention: cfg.Recording.Retention, Webhooks: a.webhooks, Registerer: a.metrics,
		Log: log.With().Str("component", "recording").Logger()}
	if cfg.Recording.Encrypt {
		opts.Key = a.box.DeriveKey(recording.KeyPurpose)
	}
	var err error
	a.recordings, err = recording.New(opts)
	return err
}

// recordingFiles serves the recordings to the calls API (records.Recordings).
type recordingFiles struct{ s *recording.Service }

func (f recordingFiles) OpenFile(id string) (records.RecordingFile, time.Time, error) {
	file, err := f.s.Open(id)
	if errors.Is(err, recording.ErrNotFound) {
		return nil, time.Time{}, records.ErrNoRecording
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	return file, file.ModTime, nil
}

func (f recordingFiles) Has(id string) bool { return f.s.Exists(id) }

func (f recordingFiles) Remove(id string) error {
	err := f.s.Delete(id)
	switch {
	case errors.Is(err, recording.ErrNotFound):
		return records.ErrNoRecording
	case errors.Is(err, recording.ErrInProgress):
		return records.ErrRecordingInProgress
	}
	return err
}
