// Package stream is the model side of a call whose "model" is a customer's
// bot reached over a media stream: a WebSocket speaking the Twilio Media
// Streams protocol (connected, start, media, dtmf, mark, stop to the bot;
// media, mark, clear from it), or an Asterisk AudioSocket TCP connection.
// A Stream is a call.Conversation: the call routes the caller's audio to it
// and plays what it says through its Speaker, so a streamed call is
// recorded, measured, transferred and hung up like any other.
//
// The stream dials the bot while the caller hears ringing (the address
// policy of webhooks applies to the URL and to every connection; TLS is
// verified; the upgrade request carries a Standard Webhooks signature and
// the bearer token). The caller's audio goes out in 20 ms media messages
// from the media goroutine, through a bounded queue to one writer
// goroutine; the bot's audio, of any chunk size, is queued on the caller's
// playout and paced by the leg's pacer. What the stream queued is mirrored
// (playback.go), so a mark is answered when the pacer has sent the audio
// before it, and clear flushes at once. The bot's socket closing ends the
// call, or hands it to a fallback agent; the call ending sends stop and
// closes the socket.
package stream
