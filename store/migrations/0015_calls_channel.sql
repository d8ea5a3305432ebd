-- The channel a call came in on: "sip" (a phone, through the SIP server)
-- or "webrtc" (a browser, through /v1/realtime/calls). Calls recorded
-- before browser calls existed were all phone calls.
ALTER TABLE calls ADD COLUMN channel TEXT NOT NULL DEFAULT 'sip';
