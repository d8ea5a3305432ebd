-- SRTP per number: '' (the appliance's rtp.srtp), off, optional or required.
ALTER TABLE phone_numbers ADD COLUMN srtp TEXT NOT NULL DEFAULT '';
