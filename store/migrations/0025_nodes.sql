-- The nodes of a fleet that share this database. A node registers on start
-- and beats every few seconds; a node whose beat is older than the node
-- timeout is lost, and a surviving node closes its open call records.
-- cluster_addr is where the other nodes reach its HTTP API (forwarded call
-- control, live state); state is active, draining, stopped or lost.
CREATE TABLE nodes (
    id            TEXT PRIMARY KEY,
    cluster_addr  TEXT NOT NULL,
    sip_addr      TEXT NOT NULL DEFAULT '',
    state         TEXT NOT NULL,
    started_us    INTEGER NOT NULL,
    heartbeat_us  INTEGER NOT NULL
);
