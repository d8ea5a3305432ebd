package sip

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type timeline struct {
	mu     sync.Mutex
	events []SoftphoneEvent
}

func (tl *timeline) add(e SoftphoneEvent) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, e)
}

func (tl *timeline) kinds() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []string
	for _, e := range tl.events {
		out = append(out, e.Kind)
	}
	return out
}

func newTestSoftphone(t *testing.T) *Softphone {
	t.Helper()
	d, err := NewSoftphone(SoftphoneOptions{}, testLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

var softphoneRTP = netip.MustParseAddrPort("127.0.0.1:41000")

func TestSoftphoneCallSHA256AndBye(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport string
		status    int
	}{{"udp 401", "udp", 401}, {"tcp 407", "tcp", 407}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newAnsweringHandler()
			srv := startServer(t, Options{ChallengeStatus: tc.status, RTPPublicIP: netip.MustParseAddr("203.0.113.7")}, h)
			d := newTestSoftphone(t)
			target := srv.UDPAddr()
			if tc.transport == "tcp" {
				target = srv.TCPAddr()
			}
			var tl timeline
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			call, err := d.Dial(ctx, DialRequest{
				Target: target.String(), Transport: tc.transport, To: "15551230001",
				User: authUser, Password: authPass, RTPAddr: softphoneRTP,
				Codecs: []Codec{PCMA, PCMU}, OnEvent: tl.add,
			})
			require.NoError(t, err)
			m := call.Media()
			require.Equal(t, "PCMA", m.Codec.Name)
			require.Equal(t, uint8(101), m.DTMFPayloadType)
			require.Equal(t, "203.0.113.7:30000", m.RemoteAddr.String())
			require.Equal(t, []string{"invite_sent", "challenge", "invite_sent", "answered", "ack_sent"}, withoutProvisional(tl.kinds()))

			require.NoError(t, call.SendInfo(ctx, "application/dtmf-relay", []byte("Signal=5\r\nDuration=160\r\n")))
			require.NoError(t, call.Hangup(ctx, "done"))
			r := h.next(t)
			require.ErrorIs(t, r.cause, ErrRemoteBye)
			select {
			case info := <-r.call.Infos():
				require.Equal(t, "application/dtmf-relay", info.ContentType)
				require.Contains(t, string(info.Body), "Signal=5")
			default:
				t.Fatal("INFO not delivered")
			}
		})
	}
}

// withoutProvisional drops 1xx events, whose delivery order against the
// final response is not guaranteed by the transaction layer.
func withoutProvisional(k []string) []string {
	var out []string
	for _, s := range k {
		if s != "provisional" {
			out = append(out, s)
		}
	}
	return out
}

func TestSoftphoneServerHangsUp(t *testing.T) {
	h := newAnsweringHandler()
	h.hangupAfter = 200 * time.Millisecond
	srv := startServer(t, Options{}, h)
	d := newTestSoftphone(t)
	var tl timeline
	call, err := d.Dial(context.Background(), DialRequest{Target: srv.UDPAddr().String(), To: "+15551230000", RTPAddr: softphoneRTP, OnEvent: tl.add})
	require.NoError(t, err)
	require.Equal(t, "PCMU", call.Media().Codec.Name)
	select {
	case <-call.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no BYE from server")
	}
	require.ErrorIs(t, context.Cause(call.Context()), ErrRemoteBye)
	require.Contains(t, tl.kinds(), "bye_received")
	r := h.next(t)
	require.ErrorIs(t, r.cause, ErrLocalHangup)
	// Requests leave from the softphone's own socket, so NATs and firewalls
	// see one address and the server's BYE finds the softphone.
	require.Equal(t, d.LocalAddr(), r.call.SourceAddr())
}

func TestSoftphoneWrongPassword(t *testing.T) {
	srv := startServer(t, Options{}, newAnsweringHandler())
	d := newTestSoftphone(t)
	_, err := d.Dial(context.Background(), DialRequest{Target: srv.UDPAddr().String(), To: "+15551230001", User: authUser, Password: "nope", RTPAddr: softphoneRTP})
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 401, se.Status)
}

func TestSoftphoneCancel(t *testing.T) {
	h := newAnsweringHandler()
	h.ringFor = 5 * time.Second
	srv := startServer(t, Options{}, h)
	d := newTestSoftphone(t)
	ctx, cancel := context.WithCancel(context.Background())
	var tl timeline
	ringing := func(e SoftphoneEvent) { // the caller gives up once it rings
		tl.add(e)
		if e.Kind == "provisional" && e.Status == 180 {
			cancel()
		}
	}
	_, err := d.Dial(ctx, DialRequest{Target: srv.UDPAddr().String(), To: "+15551230000", RTPAddr: softphoneRTP, OnEvent: ringing})
	require.Error(t, err)
	require.ErrorIs(t, h.next(t).cause, ErrCanceled)
	require.Contains(t, tl.kinds(), "cancel_sent")
	require.Eventually(t, func() bool { return srv.ActiveCalls() == 0 }, 2*time.Second, 10*time.Millisecond)
}

func TestShutdownHangsUpAfterDrainTimeout(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{DrainTimeout: 300 * time.Millisecond}, h)
	d := newTestSoftphone(t)
	call, err := d.Dial(context.Background(), DialRequest{Target: srv.UDPAddr().String(), To: "+15551230000", RTPAddr: softphoneRTP})
	require.NoError(t, err)
	srv.Shutdown(context.Background())
	require.Equal(t, 0, srv.ActiveCalls())
	<-call.Context().Done()
	require.ErrorIs(t, context.Cause(call.Context()), ErrRemoteBye)
	require.ErrorIs(t, h.next(t).cause, ErrShutdown)
	_, err = d.Dial(context.Background(), DialRequest{Target: srv.UDPAddr().String(), To: "+15551230000", RTPAddr: softphoneRTP})
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 503, se.Status)
}

var _ = errors.Is

func TestTransferREFER(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
	}{{"success", 200}, {"target busy", 486}} {
		t.Run(tc.name, func(t *testing.T) {
			results := make(chan error, 1)
			h := HandlerFunc(func(ctx context.Context, call *Call) {
				if err := call.Answer(ctx, netip.MustParseAddrPort("127.0.0.1:30000")); err != nil {
					results <- err
					return
				}
				err := call.Transfer(ctx, "sip:+15557770000@pbx.example", "")
				results <- err
				_ = call.Hangup(context.Background(), "transferred")
			})
			srv := startServer(t, Options{}, h)
			d := newTestSoftphone(t)
			var tl timeline
			referTo := make(chan string, 1)
			call, err := d.Dial(context.Background(), DialRequest{
				Target: srv.UDPAddr().String(), To: "+15551230000", RTPAddr: softphoneRTP, OnEvent: tl.add,
				OnRefer: func(to string) int { referTo <- to; return tc.status },
			})
			require.NoError(t, err)
			err = <-results
			if tc.status == 200 {
				require.NoError(t, err)
			} else {
				var se *StatusError
				require.ErrorAs(t, err, &se)
				require.Equal(t, 486, se.Status)
			}
			require.Equal(t, "sip:+15557770000@pbx.example", <-referTo)
			<-call.Context().Done()
			require.Contains(t, tl.kinds(), "refer_received")
		})
	}
}

// TestSoftphoneProvisionalInOrder: 100 and 180 are both reported, in the order
// they arrived, before the answer, even when the 200 follows at once.
func TestSoftphoneProvisionalInOrder(t *testing.T) {
	srv := startServer(t, Options{}, newAnsweringHandler())
	d := newTestSoftphone(t)
	for i := 0; i < 10; i++ {
		var tl timeline
		call, err := d.Dial(context.Background(), DialRequest{Target: srv.UDPAddr().String(), To: "+15551230000", RTPAddr: softphoneRTP, OnEvent: tl.add})
		require.NoError(t, err)
		var seq []string
		tl.mu.Lock()
		for _, e := range tl.events {
			if e.Kind == "provisional" {
				seq = append(seq, strconv.Itoa(e.Status))
			} else {
				seq = append(seq, e.Kind)
			}
		}
		tl.mu.Unlock()
		require.Equal(t, []string{"invite_sent", "100", "180", "answered", "ack_sent"}, seq, "call %d", i)
		require.NoError(t, call.Hangup(context.Background(), "done"))
	}
}
