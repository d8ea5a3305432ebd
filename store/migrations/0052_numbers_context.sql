-- A number's context_url: asked for an agent-routed call's context (its
-- variables, instructions, greeting or agent) while the caller hears
-- ringing ('' for none), and how long it may take in milliseconds (0: the
-- default).
ALTER TABLE phone_numbers ADD COLUMN context_url TEXT NOT NULL DEFAULT '';
ALTER TABLE phone_numbers ADD COLUMN context_timeout_ms INTEGER NOT NULL DEFAULT 0;
