package sip

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sippRegistrar runs sipp as the registrar of scenario (a UAS on a free
// loopback UDP port, one "call": the REGISTERs share a Call-ID); wait
// returns its output and exit error.
func sippRegistrar(t *testing.T, scenario string) (port int, wait func() (string, error)) {
	t.Helper()
	_, err := exec.LookPath("sipp")
	require.NoError(t, err, "sipp must be installed (apt sip-tester)")
	scenario, err = filepath.Abs(filepath.Join("testdata", "sipp", scenario))
	require.NoError(t, err)
	tmp := t.TempDir()
	port = freeUDPPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, "sipp", "-sf", scenario, "-m", "1", "-i", "127.0.0.1", "-p", fmt.Sprint(port),
		"-t", "u1", "-timeout", "40s", "-timeout_error", "-nostdin", "-trace_err", "-error_file", filepath.Join(tmp, "err.log"),
		"-trace_msg", "-message_file", filepath.Join(tmp, "msg.log"))
	cmd.Dir = tmp
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := cmd.CombinedOutput()
		errLog, _ := os.ReadFile(filepath.Join(tmp, "err.log"))
		msgLog, _ := os.ReadFile(filepath.Join(tmp, "msg.log"))
		done <- result{string(msgLog) + "\n" + string(out) + "\n" + string(errLog), err}
	}()
	var once *result
	wait = func() (string, error) {
		if once == nil {
			r := <-done
			once = &r
		}
		return once.out, once.err
	}
	t.Cleanup(func() { cancel(); wait() })
	waitUDPBound(t, port)
	return port, wait
}

// TestRegisterChallengeMinExpiresAndRoute: a registrar (sipp) answers 401,
// then 423 with Min-Expires 600, then 200 granting 600 s; the INVITE that
// then arrives on the registered contact routes to the registration's
// number; the unregister carries Expires: 0 and the same credentials.
func TestRegisterChallengeMinExpiresAndRoute(t *testing.T) {
	port, wait := sippRegistrar(t, "registrar.xml")
	h := newAnsweringHandler()
	srv := startServer(t, Options{}, h)
	reg, err := srv.NewRegistration(Binding{Registrar: fmt.Sprintf("sip:127.0.0.1:%d", port), Username: authUser, Password: authPass,
		Expires: 120 * time.Second, Numbers: []string{openNumber}})
	require.NoError(t, err)
	defer reg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := reg.Register(ctx)
	if err != nil {
		out, _ := wait()
		t.Fatalf("register: %v\n%s", err, tail(out, 4000))
	}
	require.Equal(t, 200, res.Status)
	require.Equal(t, 600*time.Second, res.Expires, "the registrar's grant, after its 423")
	require.Equal(t, fmt.Sprintf("sip:alice@%s", srv.UDPAddr()), res.Contact)

	// A call for the contact user is a call to the number.
	out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, g711Case("registered_contact", 200)), authUser)
	requireSipp(t, out, err)
	r := h.next(t)
	require.NoError(t, r.err)
	require.Equal(t, openNumber, r.call.Route().PhoneNumber)

	require.NoError(t, reg.Unregister(ctx))
	out, err = wait()
	require.NoError(t, err, "the registrar's checks: %s", tail(out, 4000))
	require.NotContains(t, out, "403 Forbidden")

	// Closed, the contact no longer routes: the contact user is not a number.
	reg.Close()
	out, err = runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, g711Case("closed_contact", 404)), authUser)
	requireSipp(t, out, err)
}

// TestRegisterWrongPassword: a registrar that refuses the answer to its own
// challenge makes Register fail with its status, after two REGISTERs.
func TestRegisterWrongPassword(t *testing.T) {
	port, wait := sippRegistrar(t, "registrar.xml")
	srv := startServer(t, Options{}, newAnsweringHandler())
	reg, err := srv.NewRegistration(Binding{Registrar: fmt.Sprintf("sip:127.0.0.1:%d", port), Username: authUser, Password: "wrong-password",
		Expires: 120 * time.Second, Numbers: []string{openNumber}})
	require.NoError(t, err)
	defer reg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = reg.Register(ctx)
	var re *RegisterError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 403, re.Status)
	out, _ := wait()
	require.Contains(t, out, "403 Forbidden")
}

// TestRegisterBehindNAT: the registrar saw the REGISTER come from another
// address (Via received and rport): the contact moves there in the next
// REGISTER, which also removes the old one.
func TestRegisterBehindNAT(t *testing.T) {
	port, wait := sippRegistrar(t, "registrar_nat.xml")
	srv := startServer(t, Options{}, newAnsweringHandler())
	reg, err := srv.NewRegistration(Binding{Registrar: fmt.Sprintf("sip:127.0.0.1:%d", port), Username: authUser,
		Expires: 120 * time.Second, Numbers: []string{openNumber}})
	require.NoError(t, err)
	defer reg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := reg.Register(ctx)
	require.NoError(t, err)
	require.Equal(t, "sip:alice@127.0.0.9:40001", res.Contact)
	require.Equal(t, 120*time.Second, res.Expires)
	out, err := wait()
	require.NoError(t, err, "%s", tail(out, 4000))
}

// TestRegisterKeepAliveAndRequest: what goes on the wire to a registrar
// that never answers: the REGISTER (rport asked for, Expires, Contact,
// one Call-ID) and, once its address is known, the CRLF keep-alive.
func TestRegisterKeepAliveAndRequest(t *testing.T) {
	peer, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer peer.Close()
	srv := startServer(t, Options{}, newAnsweringHandler())
	reg, err := srv.NewRegistration(Binding{Registrar: "sip:" + peer.LocalAddr().String(), Username: "1001", ContactUser: "sb-1001",
		Password: "whatever-pw", Numbers: []string{openNumber}})
	require.NoError(t, err)
	defer reg.Close()
	_, err = srv.NewRegistration(Binding{Registrar: "sip:" + peer.LocalAddr().String(), Username: "1002", ContactUser: "sb-1001"})
	require.ErrorIs(t, err, ErrContactInUse)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = reg.Register(ctx)
	cancel()
	var re *RegisterError
	require.ErrorAs(t, err, &re, "no answer is a failure without a status")
	require.Zero(t, re.Status)

	buf := make([]byte, 4096)
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := peer.ReadFrom(buf)
	require.NoError(t, err)
	msg := string(buf[:n])
	require.True(t, strings.HasPrefix(msg, "REGISTER sip:"+peer.LocalAddr().String()+" SIP/2.0\r\n"), msg)
	require.Contains(t, msg, ";rport")
	require.Contains(t, msg, "Expires: 300\r\n")
	require.Contains(t, msg, fmt.Sprintf("Contact: <sip:sb-1001@%s>", srv.UDPAddr()))
	require.Contains(t, msg, "To: <sip:1001@127.0.0.1>")
	require.Equal(t, srv.UDPAddr().String(), from.String(), "REGISTERs leave from the server's socket")

	require.NoError(t, reg.KeepAlive(context.Background()))
	for {
		n, _, err = peer.ReadFrom(buf)
		require.NoError(t, err)
		if string(buf[:n]) == "\r\n\r\n" {
			break
		}
		require.True(t, strings.HasPrefix(string(buf[:n]), "REGISTER"), "only the REGISTER's retransmissions and the ping: %q", buf[:n])
	}
	reg.Close()
	require.ErrorIs(t, reg.KeepAlive(context.Background()), ErrRegistrationClosed)
}

func TestCheckRegistrarURI(t *testing.T) {
	for _, tc := range []struct {
		uri, host string
		bad       bool
	}{
		{uri: "sip:pbx.example.com", host: "pbx.example.com"},
		{uri: "sip:203.0.113.5:5080", host: "203.0.113.5"},
		{uri: "sip:[2001:db8::1]:5060", host: "[2001:db8::1]"},
		{uri: "http://pbx.example.com", bad: true},
		{uri: "sips:pbx.example.com", bad: true},
		{uri: "pbx.example.com", bad: true},
		{uri: "sip:alice@pbx.example.com", bad: true},
		{uri: "sip:pbx.example.com;transport=tcp", bad: true},
		{uri: "sip:pbx.example.com;lr", bad: true},
		{uri: "sip:", bad: true},
	} {
		host, err := CheckRegistrarURI(tc.uri)
		if tc.bad {
			require.Error(t, err, tc.uri)
			continue
		}
		require.NoError(t, err, tc.uri)
		require.Equal(t, tc.host, host)
	}
}
