-- Calls the appliance places (POST /v1/calls) beside the ones it answers:
-- the direction, how far the dial got (dialing, ringing, answered, busy,
-- no-answer, failed, canceled) with the final SIP status of the INVITE,
-- and what answering-machine detection heard (human, machine, unknown).
ALTER TABLE calls ADD COLUMN direction TEXT NOT NULL DEFAULT 'inbound';
ALTER TABLE calls ADD COLUMN progress TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN sip_status INTEGER NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN machine_detection TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN answered_by TEXT NOT NULL DEFAULT '';
