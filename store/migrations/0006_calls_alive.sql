-- Call records are written when a call is admitted and updated as it goes
-- (answer, transfer, end). alive_us is the last time the appliance knew the
-- call was up: every write sets it, and a low-rate touch refreshes it while
-- the call lasts. A record still open after a crash is closed at that time.
ALTER TABLE calls ADD COLUMN alive_us INTEGER NOT NULL DEFAULT 0;
-- Closing the records a crash left open reads the open ones only.
CREATE INDEX calls_end ON calls(end_us);
