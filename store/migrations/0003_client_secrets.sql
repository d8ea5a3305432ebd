-- Ephemeral realtime client secrets (POST /v1/realtime/client_secrets).
-- Only the SHA-256 hash of a secret is kept, with the session
-- configuration that is applied when the secret opens /v1/realtime.
CREATE TABLE client_secrets (
    id            TEXT PRIMARY KEY,
    team_id       TEXT NOT NULL,
    key_id        TEXT NOT NULL,  -- the API key that created it
    secret_hash   TEXT NOT NULL UNIQUE,
    session       TEXT NOT NULL DEFAULT '', -- JSON of the session config; empty: none
    expire_us     INTEGER NOT NULL,
    create_us     INTEGER NOT NULL
);
CREATE INDEX client_secrets_expire ON client_secrets(expire_us);
