package auth

import (
	"strconv"
	"sync"
	"time"
)

// tokenWindow is the span a key's tpm counts over.
const tokenWindow = time.Minute

// TokenMeter counts the model tokens each API key used over the last
// minute, for the keys' tpm limits (document 002: "limiter engages when
// strictly exceeded; in-flight requests are not aborted"): tokens are
// added as responses report their usage, and a new request of a key whose
// last minute is over its tpm is refused until enough of it ages out.
// Memory is one minute of per-second buckets per key that used tokens in
// the last minute. A TokenMeter is safe for concurrent use.
type TokenMeter struct {
	mu   sync.Mutex
	keys map[string]*tokenRing
}

// tokenRing holds a key's tokens per second of the last minute.
type tokenRing struct {
	sec    [60]int64 // unix second of each bucket
	tokens [60]int64
}

// NewTokenMeter returns an empty meter.
func NewTokenMeter() *TokenMeter { return &TokenMeter{keys: map[string]*tokenRing{}} }

// Add counts n tokens used by keyID at now.
func (m *TokenMeter) Add(keyID string, n int64, now time.Time) {
	if m == nil || n <= 0 || keyID == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.keys[keyID]
	if r == nil {
		r = &tokenRing{}
		m.keys[keyID] = r
	}
	s := now.Unix()
	i := int(s % 60)
	if r.sec[i] != s {
		r.sec[i], r.tokens[i] = s, 0
	}
	r.tokens[i] += n
	if len(m.keys) > 1024 {
		m.sweep(s)
	}
}

// sweep drops the keys with no tokens in the last minute.
func (m *TokenMeter) sweep(now int64) {
	for k, r := range m.keys {
		live := false
		for _, s := range r.sec {
			if now-s < 60 {
				live = true
				break
			}
		}
		if !live {
			delete(m.keys, k)
		}
	}
}

// Exceeded reports whether keyID used strictly more than tpm tokens in
// the minute before now (a tpm of "" or "0" is no limit) and, when it
// did, how long until it is back within the limit (whole seconds, at
// least 1).
func (m *TokenMeter) Exceeded(keyID, tpm string, now time.Time) (bool, time.Duration) {
	limit, err := strconv.ParseInt(tpm, 10, 64)
	if m == nil || err != nil || limit <= 0 {
		return false, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.keys[keyID]
	if r == nil {
		return false, 0
	}
	s := now.Unix()
	var total int64
	for i := range r.sec {
		if s-r.sec[i] < 60 {
			total += r.tokens[i]
		}
	}
	if total <= limit {
		return false, 0
	}
	// The oldest seconds age out first: wait until what remains fits.
	for age := int64(59); age >= 0; age-- {
		i := int((s - age) % 60)
		if r.sec[i] == s-age {
			total -= r.tokens[i]
		}
		if total <= limit {
			return true, time.Duration(60-age) * time.Second
		}
	}
	return true, tokenWindow
}
