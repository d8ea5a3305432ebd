-- Call records: one row per finished call, written when the call ends.
-- media is the JSON of the call's RTP statistics, notes the JSON array of
-- its record entries (transcripts, tool calls and results, DTMF, transfers,
-- webhook attempts), in the order they happened. Both are owned by the
-- calls package, so new fields need no migration.
CREATE TABLE calls (
    id               TEXT PRIMARY KEY,      -- the call id (a UUID)
    team_id          TEXT NOT NULL,
    phone_number_id  TEXT NOT NULL DEFAULT '',
    phone_number     TEXT NOT NULL DEFAULT '',
    from_user        TEXT NOT NULL DEFAULT '',
    to_user          TEXT NOT NULL DEFAULT '',
    sip_call_id      TEXT NOT NULL DEFAULT '',
    route            TEXT NOT NULL DEFAULT '',
    state            TEXT NOT NULL,
    invite_us        INTEGER NOT NULL,
    answer_us        INTEGER,
    end_us           INTEGER,
    ended_by         TEXT NOT NULL DEFAULT '',
    end_reason       TEXT NOT NULL DEFAULT '',
    media            TEXT NOT NULL DEFAULT '{}',
    notes            TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX calls_team_invite ON calls(team_id, invite_us, id);
CREATE INDEX calls_number_invite ON calls(phone_number_id, invite_us, id);
