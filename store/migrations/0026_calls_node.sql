-- A call record names the node that holds the call: call control that
-- reaches another node is forwarded there, and the records of a lost node
-- are closed by the others. '' is a record made before fleets.
ALTER TABLE calls ADD COLUMN node_id TEXT NOT NULL DEFAULT '';
CREATE INDEX calls_node_end ON calls(node_id, end_us);
