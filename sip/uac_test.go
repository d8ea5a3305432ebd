package sip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"text/template"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/stretchr/testify/require"
)

// TestUACStateMachine walks the user-agent client's transitions: what
// each input does in each state (uac.go).
func TestUACStateMachine(t *testing.T) {
	for _, tc := range []struct {
		from uacState
		in   uacInput
		to   uacState
		act  uacAction
	}{
		{uacCalling, uacProvisional, uacProceeding, uacReport},
		{uacProceeding, uacProvisional, uacProceeding, uacReport},
		{uacCalling, uacSuccess, uacConfirmed, uacAck},
		{uacProceeding, uacSuccess, uacConfirmed, uacAck},
		{uacCalling, uacChallenge, uacCalling, uacAuthenticate},
		{uacProceeding, uacChallenge, uacCalling, uacAuthenticate},
		{uacProceeding, uacFailure, uacTerminated, uacFail},
		{uacCalling, uacBroken, uacTerminated, uacFail},
		{uacCalling, uacGiveUp, uacCancelling, uacCancel},
		{uacProceeding, uacGiveUp, uacCancelling, uacCancel},
		{uacCancelling, uacProvisional, uacCancelling, uacReport},
		{uacCancelling, uacGiveUp, uacCancelling, uacNone},
		{uacCancelling, uacFailure, uacTerminated, uacFail},
		{uacCancelling, uacChallenge, uacTerminated, uacFail},
		{uacCancelling, uacBroken, uacTerminated, uacFail},
		{uacCancelling, uacSuccess, uacTerminated, uacAckBye},
		{uacConfirmed, uacSuccess, uacConfirmed, uacNone},
		{uacTerminated, uacProvisional, uacTerminated, uacNone},
	} {
		to, act := uacNext(tc.from, tc.in)
		require.Equal(t, tc.to, to, "%s + input %d", tc.from, tc.in)
		require.Equal(t, tc.act, act, "%s + input %d", tc.from, tc.in)
	}
}

// TestRecordRoute reads Record-Route values as RFC 3261 section 20.30
// writes them: several headers, several comma-separated values in one,
// parameters inside and after the angle brackets, display names.
func TestRecordRoute(t *testing.T) {
	hs := []sip.Header{
		sip.NewHeader("Record-Route", "<sip:p3.example.com;lr>, <sip:p2.example.com:5070;lr;transport=tcp>;foo=bar"),
		sip.NewHeader("Record-Route", `"edge" <sip:192.0.2.1;lr>`),
		sip.NewHeader("Record-Route", "sip:bare.example.com;lr"),
	}
	var got []string
	for _, u := range recordRoute(hs) {
		got = append(got, u.String())
	}
	require.Equal(t, []string{"sip:p3.example.com;lr", "sip:p2.example.com:5070;lr;transport=tcp", "sip:192.0.2.1;lr", "sip:bare.example.com;lr"}, got)
}

// uasCase fills testdata/sipp/uas.xml.tmpl: sipp as the callee.
type uasCase struct {
	Name        string
	RecordRoute bool
	Retransmit  bool
	Cross       bool
	// Template is another scenario (default uas.xml.tmpl); Mode and
	// Refreshes are its fields (timer_callee.xml.tmpl).
	Template  string
	Mode      string
	Refreshes []struct{}
}

// sippUAS is sipp running as a callee.
type sippUAS struct {
	addr netip.AddrPort
	done chan struct{}
	out  string
	err  error
}

// wait returns sipp's verdict on the call: nil when every message of
// the scenario came as it says.
func (u *sippUAS) wait(t *testing.T) {
	t.Helper()
	select {
	case <-u.done:
	case <-time.After(20 * time.Second):
		t.Fatal("sipp did not finish")
	}
	if u.err != nil {
		t.Fatalf("sipp: %v\n%s", u.err, tail(u.out, 6000))
	}
}

// startUAS runs sipp as the callee of one call on a free loopback port.
func startUAS(t *testing.T, c uasCase) *sippUAS {
	t.Helper()
	_, err := exec.LookPath("sipp")
	require.NoError(t, err, "sipp must be installed (apt sip-tester)")
	file := c.Template
	if file == "" {
		file = "uas.xml.tmpl"
	}
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "sipp", file))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, tmpl.Execute(&buf, c))
	dir := t.TempDir()
	scenario := filepath.Join(dir, "uas.xml")
	require.NoError(t, os.WriteFile(scenario, buf.Bytes(), 0o600))
	port := freeUDPPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	args := []string{"-sf", scenario, "-m", "1", "-i", "127.0.0.1", "-p", fmt.Sprint(port),
		"-mp", fmt.Sprint(freeUDPPort(t)), "-t", "u1", "-timeout", "15s", "-timeout_error", "-nostdin",
		"-trace_err", "-error_file", filepath.Join(dir, "err.log"), "-trace_msg", "-message_file", filepath.Join(dir, "msg.log")}
	if c.Retransmit {
		// sipp takes a request identical to the last one it received
		// for a retransmission and answers it with what it sent next,
		// which makes the repeated ACK of a repeated 200 OK loop; -nr
		// turns that off (the scenario retransmits by hand).
		args = append(args, "-nr")
	}
	cmd := exec.CommandContext(ctx, "sipp", args...)
	cmd.Dir = dir
	u := &sippUAS{addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), done: make(chan struct{})}
	require.NoError(t, cmd.Start())
	go func() {
		defer close(u.done)
		defer cancel()
		u.err = cmd.Wait()
		errLog, _ := os.ReadFile(filepath.Join(dir, "err.log"))
		msgLog, _ := os.ReadFile(filepath.Join(dir, "msg.log"))
		u.out = string(msgLog) + "\n" + string(errLog)
	}()
	t.Cleanup(func() {
		cancel()
		<-u.done
		if t.Failed() {
			t.Logf("sipp: %v\n%s", u.err, tail(u.out, 6000))
		}
	})
	// An INVITE sent before sipp reads its socket is retransmitted, but a
	// CANCEL can come first then: wait until sipp holds its port.
	require.Eventually(t, func() bool { return udpBound(t, port) }, 10*time.Second, 5*time.Millisecond, "sipp did not bind its port")
	return u
}

// udpBound reports whether a socket is bound to the loopback UDP port
// (Linux: /proc/net/udp lists local addresses as hex IP:port).
func udpBound(t *testing.T, port int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/udp")
	require.NoError(t, err)
	return bytes.Contains(b, []byte(fmt.Sprintf(" 0100007F:%04X ", port)))
}

// placeTo places a call from srv to the sipp callee u.
func placeTo(t *testing.T, srv *Server, u *sippUAS, ring time.Duration) *Call {
	t.Helper()
	c, err := srv.Place(context.Background(), PlaceRequest{Target: "sip:callee@" + u.addr.String(), From: "+15550001111", RingTimeout: ring})
	require.NoError(t, err)
	return c
}

var placeRTP = netip.MustParseAddrPort("127.0.0.1:42000")

// TestUACRouteSet: the route set of a call we place is the 200 OK's
// Record-Route in reverse (RFC 3261 section 12.1.2), a header holding two
// values read as two routes; the ACK, its re-sending for a retransmitted
// 200 OK (section 13.2.2.4) and the BYE carry it and go to its first
// entry (sipp checks each), for placed calls and the Softphone alike.
func TestUACRouteSet(t *testing.T) {
	for _, c := range []uasCase{
		{Name: "we_hang_up", RecordRoute: true},
		{Name: "ack_lost", RecordRoute: true, Retransmit: true},
	} {
		// hangUp ends the call: our BYE, or the callee's after its
		// retransmitted 200 OK got its second ACK.
		hangUp := func(t *testing.T, ctx context.Context, call interface {
			Hangup(context.Context, string) error
			Context() context.Context
		}) {
			if !c.Retransmit {
				require.NoError(t, call.Hangup(ctx, "done"))
				return
			}
			select {
			case <-call.Context().Done():
				require.ErrorIs(t, context.Cause(call.Context()), ErrRemoteBye)
			case <-ctx.Done():
				t.Fatal("no BYE from the callee")
			}
		}
		t.Run("placed "+c.Name, func(t *testing.T) {
			srv := startServer(t, Options{}, newAnsweringHandler())
			u := startUAS(t, c)
			call := placeTo(t, srv, u, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, call.Answer(ctx, placeRTP))
			require.Equal(t, "PCMU", call.Media().Codec.Name)
			hangUp(t, ctx, call)
			u.wait(t)
		})
		t.Run("softphone "+c.Name, func(t *testing.T) {
			u := startUAS(t, c)
			p := newTestSoftphone(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			call, err := p.Dial(ctx, DialRequest{Target: "sip:callee@" + u.addr.String(), RTPAddr: softphoneRTP, Codecs: []Codec{PCMU}})
			require.NoError(t, err)
			hangUp(t, ctx, call)
			u.wait(t)
		})
	}
}

// TestUACAnswerCrossesCancel: a 2xx that crosses our CANCEL (RFC 3261
// section 9.1) is ACKed and the call ended with BYE at once; the dial
// reports the caller's reason. The Softphone used to take such a call as
// answered.
func TestUACAnswerCrossesCancel(t *testing.T) {
	c := uasCase{Name: "cross", Cross: true}
	t.Run("placed", func(t *testing.T) {
		srv := startServer(t, Options{}, newAnsweringHandler())
		u := startUAS(t, c)
		call := placeTo(t, srv, u, 300*time.Millisecond)
		err := call.Answer(context.Background(), placeRTP)
		var de *DialError
		require.ErrorAs(t, err, &de)
		require.Equal(t, 200, de.Status)
		require.ErrorIs(t, err, ErrRingTimeout)
		require.ErrorIs(t, context.Cause(call.Context()), ErrRejected)
		u.wait(t)
		require.Eventually(t, func() bool { return srv.ActiveCalls() == 0 }, 2*time.Second, 10*time.Millisecond)
	})
	t.Run("softphone", func(t *testing.T) {
		u := startUAS(t, c)
		p := newTestSoftphone(t)
		giveUp := errors.New("no answer in time")
		ctx, cancel := context.WithTimeoutCause(context.Background(), 300*time.Millisecond, giveUp)
		defer cancel()
		var tl timeline
		_, err := p.Dial(ctx, DialRequest{Target: "sip:callee@" + u.addr.String(), RTPAddr: softphoneRTP, Codecs: []Codec{PCMU}, OnEvent: tl.add})
		require.ErrorIs(t, err, giveUp)
		require.Contains(t, tl.kinds(), "cancel_sent")
		u.wait(t)
	})
}
