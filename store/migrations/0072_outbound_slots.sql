-- Fleet-wide outbound limits. outbound_teams holds each team's rate state
-- (the theoretical arrival time of the GCRA behind calls_per_second) and
-- is the row a reservation locks; outbound_slots holds one row per placed
-- call in progress, naming the node that runs it, so that the slots of a
-- node found lost stop counting.
CREATE TABLE outbound_teams (
    team_id TEXT PRIMARY KEY,
    tat_us  INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE outbound_slots (
    id       TEXT PRIMARY KEY,
    team_id  TEXT NOT NULL,
    node_id  TEXT NOT NULL,
    start_us INTEGER NOT NULL
);
CREATE INDEX outbound_slots_team ON outbound_slots(team_id);
CREATE INDEX outbound_slots_node ON outbound_slots(node_id);
