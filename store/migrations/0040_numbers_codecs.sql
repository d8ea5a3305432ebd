-- Codec preference per number: '' (the best codec both sides have) or a
-- comma-separated list of G722, PCMU, PCMA, best first.
ALTER TABLE phone_numbers ADD COLUMN codecs TEXT NOT NULL DEFAULT '';
