package httpx

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Error is an API error: it becomes an HTTP status and the body
// {"error":{"code":…,"message":…,"param":…}}.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header (429, 503).
	RetryAfter time.Duration `json:"-"`
	// Allow, when set, is sent as the Allow header (405).
	Allow string `json:"-"`
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s (%s): %s", e.Code, e.Param, e.Message)
	}
	return e.Code + ": " + e.Message
}

// BadRequest is a 400 naming the offending field.
func BadRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_request", Param: param, Message: fmt.Sprintf(format, args...)}
}

// Unauthorized is a 401.
func Unauthorized(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: msg}
}

// Forbidden is a 403.
func Forbidden(msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: "permission_denied", Message: msg}
}

// NotFound is a 404.
func NotFound(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf(format, args...)}
}

// Conflict is a 409, with the field at fault when there is one.
func Conflict(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusConflict, Code: "conflict", Param: param, Message: fmt.Sprintf(format, args...)}
}

// TooManyRequests is a 429 with Retry-After.
func TooManyRequests(retry time.Duration) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: "rate limit exceeded for this API key", RetryAfter: retry}
}

// Unavailable is a 503 with Retry-After.
func Unavailable(msg string, retry time.Duration) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: msg, RetryAfter: retry}
}

// WriteError writes err as the API error body. Errors that are not *Error
// become a 500 whose message does not leak internals.
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"}
	}
	if e.RetryAfter > 0 {
		secs := int((e.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	if e.Allow != "" {
		w.Header().Set("Allow", e.Allow)
	}
	WriteJSON(w, e.Status, struct {
		Error *Error `json:"error"`
	}{e})
}
