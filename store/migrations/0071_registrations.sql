-- Outbound registration. number_registrations holds a number's settings
-- (its registrar, the account it registers, the password sealed with the
-- master key, the Contact user INVITEs arrive on); binding_key names the
-- binding those settings make at the registrar, shared by every number
-- that registers the same account with the same contact.
-- registration_bindings is the fleet's view of each binding: the node that
-- holds it (its lease ends at lease_us; another node may take it over
-- after that) and the state that node last wrote.
CREATE TABLE number_registrations (
    phone_number_id TEXT PRIMARY KEY,
    registrar       TEXT NOT NULL,
    transport       TEXT NOT NULL,
    outbound_proxy  TEXT NOT NULL DEFAULT '',
    username        TEXT NOT NULL,
    auth_username   TEXT NOT NULL DEFAULT '',
    password_enc    TEXT NOT NULL,
    expires_s       INTEGER NOT NULL,
    contact_user    TEXT NOT NULL,
    binding_key     TEXT NOT NULL,
    update_us       INTEGER NOT NULL
);
CREATE INDEX number_registrations_contact ON number_registrations(contact_user);

CREATE TABLE registration_bindings (
    binding_key TEXT PRIMARY KEY,
    node_id     TEXT NOT NULL DEFAULT '',
    lease_us    INTEGER NOT NULL DEFAULT 0,
    state       TEXT NOT NULL DEFAULT 'off',
    expires_us  INTEGER NOT NULL DEFAULT 0,
    last_status INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT NOT NULL DEFAULT '',
    update_us   INTEGER NOT NULL DEFAULT 0
);
