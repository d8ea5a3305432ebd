// Package console serves the web console at /console: static files
// embedded in the binary (plain JavaScript, no build step) that sign in
// with an API key (kept in the tab's memory or sessionStorage, never in a
// URL) and use the same HTTP API as everyone else, so a key sees and
// changes only what its ACLs allow. Pages: numbers, agents (with "Talk to
// this agent": a browser call through /v1/realtime/calls), live calls
// (pushed over GET /v1/calls/live), call records, API keys and the audit
// log.
package console
