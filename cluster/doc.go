// Package cluster makes several appliances sharing one PostgreSQL database
// a fleet behind a SIP load balancer (Kamailio's dispatcher), with no
// cluster protocol of its own: the database holds the node registry.
//
// Each node registers itself (its id and the address of its HTTP API for
// the other nodes) and beats every Heartbeat; the beat carries its state
// (active, then draining on SIGTERM, then stopped). A node that sees
// another's beat older than NodeTimeout claims it lost, once across the
// fleet, and closes its open call records.
//
// A call lives on the node that answered it, and its record names that
// node. Call control that reaches another node (refer, hangup, dtmf, the
// controller's WebSocket) is forwarded to the owner with a reverse proxy;
// the owner checks the API key again, so forwarding grants nothing. Requests
// between nodes carry an HMAC of the shared cluster secret (Verify): the
// routes for nodes only (a key's state, served by auth, asked by AskAll)
// accept nothing else, and a forwarded request is never forwarded again.
package cluster
