package main

import (
	"fmt"
	"os"
	"time"

	"switchboard/media"
	"switchboard/test/pcap"
)

// pcapToRaw extracts the RTP payloads of a pcap (Ethernet, IPv4, UDP) into
// one raw G.711 file, the input of sipp's rtp_stream action, in codec's law
// (the capture's A-law transcoded to µ-law for a PCMU caller).
//
// sipp's play_pcap_audio replays a capture as is: looping it restarts its
// sequence numbers and timestamps every 7 s, which the appliance rightly
// counts as resyncs and duplicates, polluting the figures this benchmark
// is for. rtp_stream plays the same audio with continuous sequence numbers
// and timestamps (20 ms packets) for as long as the call lasts, from a
// small thread pool rather than one thread per call.
func pcapToRaw(capture, out string, codec media.Codec) (time.Duration, error) {
	pkts, err := pcap.ReadRTP(capture)
	if err != nil {
		return 0, err
	}
	var audio []byte
	for _, p := range pkts {
		audio = append(audio, p.RTP.Payload...)
	}
	if len(audio) == 0 {
		return 0, fmt.Errorf("%s: no RTP audio", capture)
	}
	if codec.PayloadType != media.PCMA.PayloadType {
		audio = codec.Transcode(nil, media.PCMA, audio)
	}
	return time.Duration(len(audio)) * time.Second / 8000, os.WriteFile(out, audio, 0o600)
}

// scenario is a sipp UAC: INVITE offering codec, ACK, the raw G.711 file
// looped for hold, then BYE. With no audio file (call setup rate), BYE
// follows the ACK at once.
func scenario(audioFile string, hold time.Duration, codec media.Codec) string {
	stream := fmt.Sprintf(`  <nop>
    <action>
      <exec rtp_stream="%s,-1,%d"/>
    </action>
  </nop>
  <pause milliseconds="%d"/>
  <nop>
    <action>
      <exec rtp_stream="pause"/>
    </action>
  </nop>
`, audioFile, codec.PayloadType, hold.Milliseconds())
	if audioFile == "" {
		stream = ""
	}
	return fmt.Sprintf(`<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="switchboard loadbench">
  <send retrans="500">
    <![CDATA[
      INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: "sipp" <sip:+15550001111@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=user1 53655765 2353687637 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio [rtpstream_audio_port] RTP/AVP %[1]d
      a=rtpmap:%[1]d %[2]s/8000
      a=ptime:20

    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="200" rrs="true"/>
  <send>
    <![CDATA[
      ACK [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      [last_From:]
      [last_To:]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>
%[3]s  <send retrans="500">
    <![CDATA[
      BYE [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      [last_From:]
      [last_To:]
      Call-ID: [call_id]
      CSeq: 2 BYE
      Max-Forwards: 70
      Content-Length: 0

    ]]>
  </send>
  <recv response="200"/>
</scenario>
`, codec.PayloadType, codec.Name, stream)
}
