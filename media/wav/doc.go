// Package wav reads and writes RIFF/WAVE files of 16-bit linear PCM, the
// form test audio comes in (espeak-ng, sox) and the form `switchboard dial`
// records a call in.
//
// Decode accepts plain PCM and WAVE_FORMAT_EXTENSIBLE with a PCM
// sub-format, any channel count and sample rate, unknown chunks (LIST,
// fact, …) and the streaming size 0xFFFFFFFF that espeak-ng writes to a
// pipe; anything else (float, A-law, 8/24/32-bit) is refused with an error
// naming what was found. Writer streams samples to disk and fixes the
// header sizes on Close, so a recording interrupted before Close is still
// readable by tools that honour the streaming convention.
package wav
