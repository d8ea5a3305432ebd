-- A number may ask for its calls to be recorded ({"recording": {"enabled": true}});
-- 0 (off) or 1 (on).
ALTER TABLE phone_numbers ADD COLUMN recording INTEGER NOT NULL DEFAULT 0;
