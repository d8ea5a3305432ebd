package webhook

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckURL(t *testing.T) {
	var zero AddressPolicy
	for _, tc := range []struct {
		url       string
		forbidden bool
	}{
		{"http://169.254.169.254/latest/meta-data/", true},
		{"http://169.254.170.2/v2/credentials", true},
		{"http://[fe80::1]/", true},
		{"http://[fe80::1%25eth0]:8080/", true},
		{"http://100.100.100.200/latest/meta-data", true},
		{"http://[fd00:ec2::254]/latest", true},
		{"http://168.63.129.16/machine", true},
		{"http://[::ffff:169.254.169.254]/", true},
		{"http://[::ffff:a9fe:a9fe]/", true},
		{"http://[64:ff9b::a9fe:a9fe]/", true},
		{"http://[::169.254.169.254]/", true},
		{"http://2852039166/", true},          // decimal
		{"http://0xa9fea9fe/", true},          // hex
		{"http://0251.0376.0251.0376/", true}, // octal
		{"http://169.254.43518/", true},       // a.b.c
		{"http://0/", true},                   // 0.0.0.0
		{"http://224.0.0.1/", true},           // multicast
		{"http://metadata.google.internal/", true},
		{"http://METADATA.google.internal./computeMetadata/v1/", true},
		{"http://127.0.0.1:8080/hook", false}, // loopback stays allowed
		{"http://[::1]:8080/hook", false},
		{"http://localhost:9000/", false},
		{"https://10.0.0.5/hook", false}, // private networks too
		{"https://192.168.1.10/hook", false},
		{"https://hooks.example.com/a", false},
		{"https://169.254.example.com/", false}, // a name: checked when resolved
		{"https://1.2.3.4.5/", false},           // not an address
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := zero.CheckURL(tc.url)
			if tc.forbidden {
				require.ErrorIs(t, err, ErrForbiddenAddress)
			} else {
				require.NoError(t, err)
			}
		})
	}
	p, err := ParseAddressPolicy([]string{"169.254.169.254", " fe80::/10 "})
	require.NoError(t, err)
	require.NoError(t, p.CheckURL("http://169.254.169.254/"))
	require.NoError(t, p.CheckURL("http://metadata.google.internal/"))
	require.NoError(t, p.CheckURL("http://[fe80::2]/"))
	require.ErrorIs(t, p.CheckURL("http://169.254.169.253/"), ErrForbiddenAddress)
	_, err = ParseAddressPolicy([]string{"not-a-cidr"})
	require.Error(t, err)
}

// dnsServer answers every A query on loopback with addr: a real resolver
// peer for the dialer (no name leaves the machine).
func dnsServer(t *testing.T, addr func() netip.Addr) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 12 {
				continue
			}
			q := buf[:n]
			// The question ends after the name's zero label and 4 bytes.
			end := 12
			for end < n && q[end] != 0 {
				end += int(q[end]) + 1
			}
			end += 5
			if end > n {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[end-4:])
			resp := append([]byte(nil), q[:end]...)
			resp[2], resp[3] = 0x81, 0x80 // response, recursion available, no error
			binary.BigEndian.PutUint16(resp[6:], 0)
			binary.BigEndian.PutUint16(resp[8:], 0)
			binary.BigEndian.PutUint16(resp[10:], 0)
			if a := addr(); qtype == 1 && a.Is4() {
				binary.BigEndian.PutUint16(resp[6:], 1)
				ip := a.As4()
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4)
				resp = append(resp, ip[:]...)
			}
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}

// TestTransportRefusesResolvedAddress: a name that resolves to a metadata
// address is refused when the request is sent, before any byte leaves;
// the same name resolving to loopback is delivered.
func TestTransportRefusesResolvedAddress(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits++ }))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")

	answer := netip.MustParseAddr("169.254.169.254")
	dns := dnsServer(t, func() netip.Addr { return answer })
	p := AddressPolicy{Resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}}
	tr := p.Transport()
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	url := "http://hooks.switchboard.test:" + port + "/hook"
	require.NoError(t, p.CheckURL(url), "a name passes when it is stored")

	_, err := c.Post(url, "application/json", strings.NewReader("{}"))
	require.ErrorIs(t, err, ErrForbiddenAddress)
	require.Zero(t, hits)

	answer = netip.MustParseAddr("127.0.0.1")
	resp, err := c.Post(url, "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 1, hits)
}

// TestDeliverToForbiddenAddressIsNotRetried: the dispatcher's own
// transport refuses the address, and the delivery stops at once.
func TestDeliverToForbiddenAddressIsNotRetried(t *testing.T) {
	d := NewDispatcher(Options{}, testLogger(t))
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	res, err := d.Deliver(ctx, Target{URL: "http://169.254.169.254/hook", SigningSecret: newSecret(t)}, NewEvent("realtime.call.incoming", time.Now(), map[string]string{}))
	require.ErrorIs(t, err, ErrInvalidTarget)
	require.ErrorIs(t, err, ErrForbiddenAddress)
	require.Len(t, res.Attempts, 1)
	require.Less(t, time.Since(start), time.Second)

	tc, err := NewToolClient(newSecret(t))
	require.NoError(t, err)
	defer tc.Close()
	_, err = tc.Call(ctx, "http://[fe80::1]:9/tool", ToolRequest{Name: "x"})
	require.True(t, errors.Is(err, ErrForbiddenAddress), "%v", err)
}
