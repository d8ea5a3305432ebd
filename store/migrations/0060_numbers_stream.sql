-- A number routed to a bot's media stream: the bot's URL ('' when the
-- number routes elsewhere), its protocol (twilio or audiosocket), the
-- track sent (inbound or both), the start message's customParameters (a
-- JSON object), the agent that takes the call when the bot is gone ('' for
-- none), and the bearer token and Standard Webhooks signing secret of the
-- upgrade request, sealed with the master key.
ALTER TABLE phone_numbers ADD COLUMN stream_url TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN stream_protocol TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN stream_track TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN stream_parameters TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN stream_fallback_agent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN stream_auth_token_enc TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN stream_signing_secret_enc TEXT NOT NULL DEFAULT '';
