package webhook

import "time"

// Attempt is one POST of a delivery (or one failed try to obtain its OAuth
// token), as kept in the call record.
type Attempt struct {
	// At is when the attempt started (the dispatcher's clock).
	At time.Time `json:"at"`
	// Status is the HTTP status of the response; 0 when none arrived.
	Status int `json:"status"`
	// Latency is the time from sending the request to the end of the
	// response headers (or to the error), including obtaining an OAuth
	// token when the cache had none. In JSON, nanoseconds.
	Latency time.Duration `json:"latency_ns"`
	// Err describes a failure ("" on success): a transport error, a
	// non-2xx status, or "oauth token: …". It never holds a secret.
	Err string `json:"error,omitempty"`
}

// Result is what a delivery did.
type Result struct {
	// EventID is the event id, the webhook-id of every attempt.
	EventID string `json:"event_id"`
	// Attempts lists every attempt in order.
	Attempts []Attempt `json:"attempts"`
	// Delivered is true when an attempt got a 2xx.
	Delivered bool `json:"delivered"`
	// Body holds the first bytes (Options.MaxResponseBytes) of the 2xx
	// response body.
	Body []byte `json:"-"`
}
