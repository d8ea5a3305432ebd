package auth

import (
	"errors"
	"fmt"
	"time"
)

const (
	// DefaultRotationGrace is how long an old secret stays valid after a
	// rotate request that does not set oldSecretExpireTime.
	DefaultRotationGrace = 24 * time.Hour
	// MaxRotationGrace is the longest an old secret may stay valid.
	MaxRotationGrace = 7 * 24 * time.Hour
)

var errOldSecretExpiry = errors.New("oldSecretExpireTime must be in the future and at most 7 days from now")

// OldSecretExpiry returns when a rotated-out secret stops being accepted.
// A zero requested time means now+grace (grace ≤ 0 means
// [DefaultRotationGrace]); a requested time must lie in (now, now+7 days].
func OldSecretExpiry(now, requested time.Time, grace time.Duration) (time.Time, error) {
	if requested.IsZero() {
		if grace <= 0 {
			grace = DefaultRotationGrace
		}
		return now.Add(min(grace, MaxRotationGrace)), nil
	}
	if !requested.After(now) || requested.Sub(now) > MaxRotationGrace {
		return time.Time{}, fmt.Errorf("%w: got %s", errOldSecretExpiry, requested.UTC().Format(time.RFC3339))
	}
	return requested, nil
}
