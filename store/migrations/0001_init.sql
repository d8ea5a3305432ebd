-- Every migration runs on SQLite and PostgreSQL alike: INTEGER is a 64-bit
-- integer (the PostgreSQL store reads it as BIGINT), booleans are INTEGER 0/1.
-- API keys and management keys. Secrets are stored as SHA-256 hashes only.
CREATE TABLE api_keys (
    id                TEXT PRIMARY KEY,
    team_id           TEXT NOT NULL,
    user_id           TEXT NOT NULL,
    name              TEXT NOT NULL,
    key_hash          TEXT NOT NULL UNIQUE,
    redacted          TEXT NOT NULL,
    old_key_hash      TEXT UNIQUE,
    old_expire_us     INTEGER,
    acls              TEXT NOT NULL DEFAULT '[]',
    qps               INTEGER NOT NULL DEFAULT 0,
    qpm               INTEGER NOT NULL DEFAULT 0,
    tpm               TEXT NOT NULL DEFAULT '',
    disabled          INTEGER NOT NULL DEFAULT 0,
    expire_us         INTEGER,
    management        INTEGER NOT NULL DEFAULT 0,
    modified_by       TEXT NOT NULL DEFAULT '',
    create_us         INTEGER NOT NULL,
    modify_us         INTEGER NOT NULL
);
CREATE INDEX api_keys_team ON api_keys(team_id, create_us, id);

CREATE TABLE agents (
    id            TEXT PRIMARY KEY,
    team_id       TEXT NOT NULL,
    name          TEXT NOT NULL,
    doc           TEXT NOT NULL, -- JSON of the agent's settings
    create_us     INTEGER NOT NULL,
    update_us     INTEGER NOT NULL
);
CREATE INDEX agents_team ON agents(team_id, create_us, id);

CREATE TABLE phone_numbers (
    id                 TEXT PRIMARY KEY,
    team_id            TEXT NOT NULL,
    phone_number       TEXT NOT NULL UNIQUE,
    name               TEXT NOT NULL,
    origin             TEXT NOT NULL,
    agent_id           TEXT REFERENCES agents(id),
    webhook_id         TEXT,
    auth_username      TEXT NOT NULL DEFAULT '',
    auth_password_enc  TEXT NOT NULL DEFAULT '', -- AES-256-GCM, never plaintext
    allowed_addresses  TEXT NOT NULL DEFAULT '[]',
    inbound_trunk_id   TEXT NOT NULL,
    create_us          INTEGER NOT NULL,
    update_us          INTEGER NOT NULL
);
CREATE INDEX phone_numbers_team ON phone_numbers(team_id, create_us, id);
CREATE INDEX phone_numbers_agent ON phone_numbers(agent_id);

CREATE TABLE webhooks (
    id                  TEXT PRIMARY KEY,
    phone_number_id     TEXT NOT NULL UNIQUE REFERENCES phone_numbers(id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    url                 TEXT NOT NULL,
    auth_url            TEXT NOT NULL DEFAULT '',
    auth_token_enc      TEXT NOT NULL DEFAULT '',  -- AES-256-GCM
    signing_secret_enc  TEXT NOT NULL,             -- AES-256-GCM
    create_us           INTEGER NOT NULL
);

-- Listings order by (time_us, id); the id is the key (no SQLite-only
-- AUTOINCREMENT sequence: the same file runs on PostgreSQL).
CREATE TABLE audit_events (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    key_id       TEXT NOT NULL DEFAULT '',
    action       TEXT NOT NULL,
    resource     TEXT NOT NULL,
    description  TEXT NOT NULL,
    time_us      INTEGER NOT NULL
);
CREATE INDEX audit_team_time ON audit_events(team_id, time_us, id);
