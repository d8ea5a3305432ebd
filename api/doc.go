// Package api is the appliance's HTTP server: routing with one JSON error
// model, authentication, ACLs and rate limits applied from each route's
// description, health and readiness probes, and the metrics endpoint. The
// modules (keys, numbers, agents, calls, …) contribute their routes.
package api
