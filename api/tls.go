package api

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// certCheckInterval is how often a TLS handshake may look at the
// certificate files for a change: often enough that a renewed certificate
// is served within seconds, rarely enough that a handshake flood does not
// become a stat flood.
const certCheckInterval = time.Second

// ErrNoCertificate is returned by NewCertReloader when a file is missing.
var ErrNoCertificate = errors.New("tls certificate and key files are required")

// CertReloader serves a certificate and key pair from PEM files and picks
// up a new pair without a restart: Reload (the daemon calls it on SIGHUP)
// reads the files at once, and a handshake reads them again when their
// size or modification time changed. A pair that fails to load (a
// half-written renewal) leaves the current certificate in service and is
// retried at the next change.
type CertReloader struct {
	certFile, keyFile string
	log               zerolog.Logger
	now               func() time.Time

	mu        sync.Mutex
	cert      *tls.Certificate
	stamp     string // size and mtime of both files when cert was loaded
	lastCheck time.Time
}

// NewCertReloader loads the pair once; a pair that does not load is an
// error, so a daemon with a bad certificate does not start.
func NewCertReloader(certFile, keyFile string, log zerolog.Logger) (*CertReloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, ErrNoCertificate
	}
	c := &CertReloader{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// stampOf returns the size and modification time of both files.
func (c *CertReloader) stampOf() (string, error) {
	var s string
	for _, f := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		s += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return s, nil
}

// Reload reads the pair now. On failure the certificate in service stays.
func (c *CertReloader) Reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reloadLocked()
}

func (c *CertReloader) reloadLocked() error {
	c.lastCheck = c.now()
	stamp, err := c.stampOf()
	if err != nil {
		return fmt.Errorf("load tls certificate: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		c.stamp = stamp // retried when the files change again
		return fmt.Errorf("load tls certificate: %w", err)
	}
	changed := c.cert != nil
	c.cert, c.stamp = &cert, stamp
	if changed {
		ev := c.log.Info().Str("tls_cert", c.certFile)
		if cert.Leaf != nil {
			ev = ev.Time("not_after", cert.Leaf.NotAfter)
		}
		ev.Msg("tls certificate reloaded")
	}
	return nil
}

// GetCertificate is the tls.Config hook: it answers the current
// certificate, first reloading it when the files changed.
func (c *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); now.Sub(c.lastCheck) >= certCheckInterval {
		c.lastCheck = now
		if stamp, err := c.stampOf(); err == nil && stamp != c.stamp {
			if err := c.reloadLocked(); err != nil {
				c.log.Warn().Err(err).Msg("tls certificate changed but does not load; still serving the previous one")
			}
		}
	}
	return c.cert, nil
}

// TLSConfig returns a server configuration serving the reloader's
// certificate, TLS 1.2 or later, HTTP/1.1 (WebSocket upgrades need it).
func (c *CertReloader) TLSConfig() *tls.Config {
	return &tls.Config{GetCertificate: c.GetCertificate, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
}
