-- A number's outbound trunk: where the calls it places go (a SIP URI, ''
-- for none), the digest credentials that answer the carrier's challenge
-- (the password sealed with the master key) and the caller id its INVITEs
-- carry ('' for the number itself).
ALTER TABLE phone_numbers ADD COLUMN outbound_uri TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN outbound_username TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN outbound_password_enc TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN outbound_caller_id TEXT NOT NULL DEFAULT '';
