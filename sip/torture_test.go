package sip

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tortureCase is one RFC 4475 message (testdata/rfc4475, the messages of
// RFC 4475 section 3 byte for byte) and the final status this server must
// answer it with over UDP (0: no answer at all, e.g. a response that
// matches no transaction). Valid messages get the answer their meaning
// calls for (200 to OPTIONS, 404 for a Request-URI that is not a number,
// 405/501 for methods we do not take, 481 for a dialog we do not have);
// invalid ones the status RFC 4475 names.
var tortureCases = []struct {
	name string
	udp  int
	// tcp is the answer over TCP when it differs from udp: a message the
	// parser refuses cannot be framed in a stream, so its connection is
	// closed unanswered (-1); -2 accepts either (framing is the parser's
	// guess).
	tcp int
}{
	// 3.1.1 valid messages
	// wsinv over TCP: no message-level gate for streams, and sipgo's
	// transaction layer cannot key an RFC 2543 branch with a From tag
	// written "tag = x": it answers 400 itself.
	{"wsinv", 481, 400}, // a To tag and no such dialog
	{"intmeth", 501, 0}, // unknown method
	{"esc01", 404, 0},   // user part "sips:user@example.com" is no number
	{"escnull", 405, 0}, // REGISTER
	{"esc02", 501, 0},   // method RE%47IST%45R is not REGISTER
	{"lwsdisp", 200, 0},
	{"longreq", 404, 0},
	{"dblreq", 405, 0}, // UDP: the second message in the datagram is ignored
	{"semiuri", 200, 0},
	{"transports", 200, 0},
	{"mpart01", 405, 0}, // MESSAGE
	{"unreason", 0, 0},  // a response: no transaction, no answer
	{"noreason", 0, 0},
	// 3.1.2 invalid messages
	{"badinv01", 400, -1},
	{"clerr", 400, -1}, // Content-Length beyond the datagram
	{"scalar02", 400, -1},
	{"scalarlg", 0, 0}, // a response
	{"quotbal", 400, -1},
	{"ltgtruri", 400, -1},
	{"lwsruri", 400, -1},
	{"lwsstart", 400, -1},
	{"trws", 400, -1},
	{"escruri", 400, 0},
	{"baddate", 404, 0}, // a bad Date is ignored
	{"regbadct", 405, 0},
	{"badaspec", 400, -1},
	{"baddn", 400, -1},
	{"badvers", 505, 0},
	{"mismatch01", 400, 0},
	{"mismatch02", 400, 0},
	{"bigcode", 0, 0}, // a response
	// 3.2 transaction layer
	{"badbranch", 200, 0},
	// 3.3 application layer
	{"insuf", 400, 0},
	{"unkscm", 416, 0},
	{"novelsc", 416, -1},
	{"unksm2", 405, 0},
	{"bext01", 420, 0},
	{"invut", 415, 0},
	{"regaut01", 405, 0},
	{"multi01", 400, 0},
	{"mcl01", 400, -2}, // two Content-Lengths cannot frame a stream: 400 or closed
	{"bcast", 0, 0},
	{"zeromf", 200, 0}, // an endpoint ignores Max-Forwards: 0
	{"cparam01", 405, 0},
	{"cparam02", 405, 0},
	{"regescrt", 405, 0},
	{"sdp01", 406, 0},
	{"inv2543", 404, 0}, // RFC 2543: no Max-Forwards, Contact or branch
	{"test", 0, -1},     // no SIP version, no Via: nothing to answer to
}

func readTorture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rfc4475", name+".dat"))
	require.NoError(t, err)
	return b
}

// finalStatus reads responses from r until a final one and returns its
// status and the whole response (0, "" when none came in wait).
func finalStatus(t *testing.T, read func(time.Time) (string, error), wait time.Duration) (int, string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		msg, err := read(deadline)
		if err != nil {
			return 0, ""
		}
		code := statusOf(msg)
		if code >= 200 {
			return code, msg
		}
	}
}

func statusOf(msg string) int {
	line, _, _ := strings.Cut(msg, "\r\n")
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "SIP/2.0" {
		return -1
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// TestTortureUDP replays every RFC 4475 message over UDP on loopback:
// the valid ones are answered for what they mean, the invalid ones
// refused with the status RFC 4475 names, nothing reaches the call
// handler, and the server answers OPTIONS afterwards.
func TestTortureUDP(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{SourceFailLimit: 10_000}, h)
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.UDPAddr()))
	require.NoError(t, err)
	defer conn.Close()
	buf := make([]byte, 65535)
	read := func(deadline time.Time) (string, error) {
		_ = conn.SetReadDeadline(deadline)
		n, err := conn.Read(buf)
		return string(buf[:n]), err
	}
	for _, tc := range tortureCases {
		t.Run(tc.name, func(t *testing.T) {
			time.Sleep(50 * time.Millisecond) // see TestTortureTCP
			_, err := conn.Write(readTorture(t, tc.name))
			require.NoError(t, err)
			wait := 5 * time.Second
			if tc.udp == 0 {
				wait = 300 * time.Millisecond
			}
			got, msg := finalStatus(t, read, wait)
			require.Equal(t, tc.udp, got, "answer: %q", msg)
			if tc.udp == 420 {
				require.Contains(t, msg, "Unsupported: nothingSupportsThis, nothingSupportsThisEither\r\n")
			}
			if tc.udp == 415 || tc.udp == 406 {
				require.Contains(t, msg, "Accept: application/sdp\r\n")
			}
		})
	}
	requireNoCall(t, h)
	requireAlive(t, srv)
}

// TestTortureTCP replays the same messages over TCP, one connection each.
func TestTortureTCP(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{SourceFailLimit: 10_000}, h)
	for _, tc := range tortureCases {
		if tc.name == "dblreq" || tc.name == "inv2543" {
			continue // framed by datagram only: no Content-Length / two messages
		}
		t.Run(tc.name, func(t *testing.T) {
			want := tc.udp
			if tc.tcp != 0 {
				want = tc.tcp
			}
			// Several messages share a branch and sent-by (z9hG4bKkdjuw):
			// sent back to back, one would be the other's retransmission
			// (the server's transaction ends a moment after its answer;
			// nothing reports when).
			time.Sleep(50 * time.Millisecond)
			conn, err := net.Dial("tcp", srv.TCPAddr().String())
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Write(readTorture(t, tc.name))
			require.NoError(t, err)
			br := bufio.NewReader(conn)
			read := func(deadline time.Time) (string, error) {
				_ = conn.SetReadDeadline(deadline)
				var sb strings.Builder
				length := 0
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return "", err
					}
					sb.WriteString(line)
					if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
						length, _ = strconv.Atoi(strings.TrimSpace(v))
					}
					if line == "\r\n" {
						body := make([]byte, length)
						if _, err := br.Read(body); length > 0 && err != nil {
							return "", err
						}
						return sb.String(), nil
					}
				}
			}
			wait := 5 * time.Second
			if want <= 0 {
				wait = 300 * time.Millisecond
			}
			got, msg := finalStatus(t, read, wait)
			if want == -2 {
				require.Contains(t, []int{0, tc.udp}, got, "answer: %q", msg)
				return
			}
			if want == -1 {
				require.Equal(t, 0, got, "answer: %q", msg)
				return
			}
			require.Equal(t, want, got, "answer: %q", msg)
		})
	}
	requireNoCall(t, h)
	requireAlive(t, srv)
}

func requireNoCall(t *testing.T, h *answeringHandler) {
	t.Helper()
	select {
	case r := <-h.results:
		t.Fatalf("a torture message reached the call handler: %s", r.call.SIPCallID())
	default:
	}
}

// requireAlive sends an OPTIONS and wants 200.
func requireAlive(t *testing.T, srv *Server) {
	t.Helper()
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.UDPAddr()))
	require.NoError(t, err)
	defer conn.Close()
	port := conn.LocalAddr().(*net.UDPAddr).Port
	_, err = conn.Write([]byte("OPTIONS sip:probe@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:" + strconv.Itoa(port) +
		";branch=z9hG4bK-alive\r\nMax-Forwards: 70\r\nFrom: <sip:t@127.0.0.1>;tag=1\r\nTo: <sip:probe@127.0.0.1>\r\n" +
		"Call-ID: alive@127.0.0.1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"))
	require.NoError(t, err)
	buf := make([]byte, 4096)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(2*time.Second)))
	n, err := conn.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 200, statusOf(string(buf[:n])))
}
