package sip

import (
	"strings"
	"testing"

	"github.com/emiago/sipgo/sip"
	"github.com/stretchr/testify/require"
)

// forwardInvite is an INVITE carrying every header the default list
// forwards (two of them in compact form), a digest answer, and headers
// no one asked for.
const forwardInvite = "INVITE sip:+14155550100@sb.example SIP/2.0\r\n" +
	"Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK1\r\n" +
	"f: \"Alice Example\" <sip:+14155550123@pbx.example>;tag=1\r\n" +
	"To: <sip:+14155550100@sb.example>\r\n" +
	"i: fwd-1@pbx.example\r\n" +
	"CSeq: 1 INVITE\r\n" +
	"Contact: <sip:alice@192.0.2.1:5060>\r\n" +
	"Max-Forwards: 70\r\n" +
	"Authorization: Digest username=\"u\", response=\"0123\"\r\n" +
	"X-Account-Id: 42\r\n" +
	"x-lowercase: kept\r\n" +
	"User-to-User: 56a390f3d2b7310023a2;encoding=hex;purpose=call\r\n" +
	"P-Asserted-Identity: \"Alice A\" <sip:+14155550123@carrier.example>\r\n" +
	"P-Preferred-Identity: <sip:alice@pbx.example>\r\n" +
	"Remote-Party-ID: <sip:+14155550123@pbx.example>;party=calling\r\n" +
	"y: eyJhbGciOiJFUzI1NiJ9.e30.c2ln;info=<https://cert.example/c.pem>\r\n" +
	"Privacy: none\r\n" +
	"History-Info: <sip:+14155550199@pbx.example>;index=1\r\n" +
	"Diversion: <sip:+14155550199@pbx.example>;reason=unconditional\r\n" +
	"Diversion: <sip:+14155550198@pbx.example>;reason=no-answer\r\n" +
	"Referred-By: <sip:bob@pbx.example>\r\n" +
	"User-Agent: TestPBX 1.0\r\n" +
	"Subject: not forwarded\r\n" +
	"Content-Length: 0\r\n\r\n"

func parseInvite(t *testing.T, raw string) *sip.Request {
	t.Helper()
	msg, err := sip.ParseMessage([]byte(raw))
	require.NoError(t, err)
	req, ok := msg.(*sip.Request)
	require.True(t, ok)
	return req
}

func TestForwardHeadersDefault(t *testing.T) {
	f, err := newHeaderFilter(DefaultForwardHeaders)
	require.NoError(t, err)
	got := f.pick(parseInvite(t, forwardInvite))
	names := make([]string, 0, len(got))
	byName := map[string]string{}
	for _, h := range got {
		names = append(names, h.Name)
		byName[h.Name] = h.Value
	}
	// The order of the INVITE, long names, one entry per value; no digest
	// answer, Via, Contact or Subject.
	require.Equal(t, []string{"From", "To", "Call-ID", "X-Account-Id", "x-lowercase", "User-to-User",
		"P-Asserted-Identity", "P-Preferred-Identity", "Remote-Party-ID", "Identity", "Privacy", "History-Info",
		"Diversion", "Diversion", "Referred-By", "User-Agent"}, names)
	require.Equal(t, "42", byName["X-Account-Id"])
	require.Equal(t, "56a390f3d2b7310023a2;encoding=hex;purpose=call", byName["User-to-User"])
	require.Contains(t, byName["From"], "Alice Example")
	for _, h := range got {
		require.NotEqual(t, "Authorization", h.Name)
		require.NotEqual(t, "Subject", h.Name)
	}
}

func TestForwardHeadersConfigured(t *testing.T) {
	f, err := newHeaderFilter([]string{"x-account-*", "Subject", "Authorization", "Proxy-*"})
	require.NoError(t, err)
	got := f.pick(parseInvite(t, forwardInvite))
	require.Equal(t, []Header{{Name: "X-Account-Id", Value: "42"}, {Name: "Subject", Value: "not forwarded"}}, got,
		"only what the list names, and never a digest answer")

	for _, bad := range []string{"*", "", "X Y", "X-:"} {
		_, err := newHeaderFilter([]string{bad})
		require.Error(t, err, "%q", bad)
	}
	_, err = NewServer(Options{Addr: "127.0.0.1:0", ForwardHeaders: []string{"X-*", "Bad Name"}}, nil, nil, testLogger(t))
	require.ErrorContains(t, err, `"Bad Name"`)
}

func TestForwardHeadersBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(strings.Split(forwardInvite, "Authorization")[0])
	b.WriteString("X-Huge: " + strings.Repeat("a", MaxHeaderValue+1) + "\r\n")
	for i := 0; i < 2*MaxForwardedHeaders; i++ {
		b.WriteString("X-Many: " + strings.Repeat("b", 200) + "\r\n")
	}
	b.WriteString("Content-Length: 0\r\n\r\n")
	f, err := newHeaderFilter(DefaultForwardHeaders)
	require.NoError(t, err)
	got := f.pick(parseInvite(t, b.String()))
	total := 0
	for _, h := range got {
		require.NotEqual(t, "X-Huge", h.Name, "a value over MaxHeaderValue is not kept")
		total += len(h.Name) + len(h.Value)
	}
	require.LessOrEqual(t, len(got), MaxForwardedHeaders)
	require.LessOrEqual(t, total, MaxForwardedBytes)
	require.Greater(t, len(got), 10)
}

func TestCallerName(t *testing.T) {
	c := &Call{invite: parseInvite(t, forwardInvite)}
	require.Equal(t, "Alice Example", c.CallerName(), "the From's display name")
	noName := strings.Replace(forwardInvite, `f: "Alice Example" <sip:`, "f: <sip:", 1)
	c = &Call{invite: parseInvite(t, noName)}
	require.Equal(t, "Alice A", c.CallerName(), "else the P-Asserted-Identity's")
	bare := strings.Replace(noName, `P-Asserted-Identity: "Alice A" <sip:`, "P-Asserted-Identity: <sip:", 1)
	c = &Call{invite: parseInvite(t, bare)}
	require.Empty(t, c.CallerName())
}

// BenchmarkForwardHeaders is the cost admission adds to every INVITE.
func BenchmarkForwardHeaders(b *testing.B) {
	msg, err := sip.ParseMessage([]byte(forwardInvite))
	require.NoError(b, err)
	req := msg.(*sip.Request)
	f, err := newHeaderFilter(DefaultForwardHeaders)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		_ = f.pick(req)
	}
}
