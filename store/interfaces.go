package store

import (
	"context"
	"time"
)

// KeyStore keeps API keys.
type KeyStore interface {
	Create(ctx context.Context, k *APIKey) error
	Get(ctx context.Context, id string) (*APIKey, error)
	// ByHash finds the key whose current or old (rotated) secret has hash.
	ByHash(ctx context.Context, hash string) (*APIKey, error)
	List(ctx context.Context, teamID string, q KeyQuery) (keys []*APIKey, next string, err error)
	Update(ctx context.Context, k *APIKey) error
	Delete(ctx context.Context, id string) error
	Count(ctx context.Context) (int, error)
}

// AgentStore keeps agents.
type AgentStore interface {
	Create(ctx context.Context, a *Agent) error
	Get(ctx context.Context, id string) (*Agent, error)
	List(ctx context.Context, teamID string, p Page) (agents []*Agent, next string, err error)
	Update(ctx context.Context, a *Agent) error
	Delete(ctx context.Context, id string) error
	// Each calls fn for every agent, in creation order.
	Each(ctx context.Context, fn func(*Agent) error) error
}

// NumberStore keeps phone numbers and their webhooks.
type NumberStore interface {
	// Create stores n and, when w is not nil, its webhook.
	Create(ctx context.Context, n *PhoneNumber, w *Webhook) error
	Get(ctx context.Context, id string) (*PhoneNumber, error)
	ByNumber(ctx context.Context, e164 string) (*PhoneNumber, error)
	// Route returns the number e164 and its webhook (nil when it has
	// none) in one read: an INVITE reads the store once.
	Route(ctx context.Context, e164 string) (*PhoneNumber, *Webhook, error)
	List(ctx context.Context, teamID string, p Page) (numbers []*PhoneNumber, next string, err error)
	Update(ctx context.Context, n *PhoneNumber) error
	Delete(ctx context.Context, id string) error
	// CountByAgent counts the numbers that route to an agent (or name it
	// as their stream's fallback).
	CountByAgent(ctx context.Context, agentID string) (int, error)
	// Webhook returns the webhook of a number.
	Webhook(ctx context.Context, numberID string) (*Webhook, error)
	// PutWebhook replaces the webhook of w.PhoneNumberID.
	PutWebhook(ctx context.Context, w *Webhook) error
	DeleteWebhook(ctx context.Context, numberID string) error
}

// AuditStore appends and reads audit events.
type AuditStore interface {
	Append(ctx context.Context, e *AuditEvent) error
	List(ctx context.Context, teamID string, q AuditQuery) (events []*AuditEvent, next string, err error)
}

// CallStore keeps call records, from admission to end.
type CallStore interface {
	// Create stores a new record (ErrConflict when its id is stored
	// already).
	Create(ctx context.Context, c *Call) error
	// Put stores the record, replacing the stored one while that is still
	// open; a closed (ended) record is never changed by Put.
	Put(ctx context.Context, c *Call) error
	// PutAll puts every record as Put does, in one transaction (all are
	// stored, or none); each id at most once.
	PutAll(ctx context.Context, cs []*Call) error
	// Touch sets the alive time of the open records among ids.
	Touch(ctx context.Context, ids []string, at time.Time) error
	// CloseOpen ends the open records q selects at their last known time
	// and says how many it closed.
	CloseOpen(ctx context.Context, q CloseOpen) (int, error)
	Get(ctx context.Context, id string) (*Call, error)
	// List returns a team's calls newest first.
	List(ctx context.Context, teamID string, q CallQuery) (calls []*Call, next string, err error)
}
