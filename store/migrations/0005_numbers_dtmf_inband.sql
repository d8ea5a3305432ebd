-- In-band DTMF detection per number: '' (the agent's or the default), auto, on, off.
ALTER TABLE phone_numbers ADD COLUMN dtmf_inband TEXT NOT NULL DEFAULT '';
