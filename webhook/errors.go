package webhook

import (
	"errors"
	"fmt"
	"net/http"
)

// Errors callers test with errors.Is.
var (
	// ErrInvalidTarget: the Target cannot be delivered to (bad URL, bad
	// signing secret, incomplete OAuth credential). Nothing was sent.
	ErrInvalidTarget = errors.New("webhook: invalid target")
	// ErrQueueFull: DeliverAsync dropped the event because the queue was
	// full.
	ErrQueueFull = errors.New("webhook: delivery queue full")
	// ErrClosed: the Dispatcher is closed.
	ErrClosed = errors.New("webhook: dispatcher closed")
)

// StatusError is returned when the receiver (or the OAuth token endpoint)
// answered with a status that is not retried, such as 400, 403, 404 or a
// redirect, or with 401 again after a fresh OAuth token.
type StatusError struct {
	// Status is the HTTP status code.
	Status int
	// TokenEndpoint is true when the OAuth token endpoint gave the status.
	TokenEndpoint bool
}

// Error implements error.
func (e *StatusError) Error() string {
	where := "receiver"
	if e.TokenEndpoint {
		where = "oauth token endpoint"
	}
	return fmt.Sprintf("webhook: %s answered %d %s (not retried)", where, e.Status, http.StatusText(e.Status))
}

// unexported causes, wrapped with context.
var (
	errTokenResponse = errors.New("bad token response")
	errWindow        = errors.New("next attempt would fall after the delivery deadline")
)
