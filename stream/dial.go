package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// ErrUnreachable is the cause of a stream whose bot could not be reached:
// no connection, no upgrade within the connect timeout, a refused
// upgrade, a forbidden address.
var ErrUnreachable = errors.New("stream: the bot is unreachable")

// userAgent names the appliance in the upgrade request.
const userAgent = "Switchboard-Stream/1.0"

// dialer reaches bots under the options' address policy and TLS.
type dialer struct {
	opts Options
	ws   *websocket.Dialer
	net  *net.Dialer
}

func newDialer(o Options) *dialer {
	nd := &net.Dialer{Timeout: o.ConnectTimeout, Control: o.Addresses.Control, Resolver: o.Addresses.Resolver}
	return &dialer{opts: o, net: nd, ws: &websocket.Dialer{
		NetDialContext:   nd.DialContext,
		TLSClientConfig:  o.TLS,
		HandshakeTimeout: o.ConnectTimeout,
		// Each connection keeps its write buffer (2 KiB): it writes every
		// 20 ms, so a pool shared by all would lend it back and forth,
		// allocating gorilla's pool entry for each message.
		ReadBufferSize:  2048,
		WriteBufferSize: 2048,
		// No proxy: the address policy must hold for the bot itself.
		Proxy: nil,
	}}
}

// upgradeHeaders are the headers of the upgrade request: the bearer token
// and a Standard Webhooks signature (webhook-id: the stream's sid,
// webhook-timestamp, webhook-signature over the stream's URL exactly as
// configured), so the bot can check the stream comes from this appliance.
func upgradeHeaders(rawURL, sid, token, secret string, now time.Time) (http.Header, error) {
	h := http.Header{}
	h.Set("User-Agent", userAgent)
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if secret != "" {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return nil, errors.New("stream: the signing secret is not whsec_ + base64")
		}
		sig, err := wh.Sign(sid, now, []byte(rawURL))
		if err != nil {
			return nil, fmt.Errorf("stream: sign: %w", err)
		}
		h[standardwebhooks.HeaderWebhookID] = []string{sid}
		h[standardwebhooks.HeaderWebhookTimestamp] = []string{strconv.FormatInt(now.Unix(), 10)}
		h[standardwebhooks.HeaderWebhookSignature] = []string{sig}
	}
	return h, nil
}

// websocket dials a Twilio bot: ws:// or wss://, TLS verified.
func (d *dialer) websocket(ctx context.Context, rawURL string, h http.Header) (*websocket.Conn, error) {
	if err := d.check(rawURL, "ws", "wss"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.ConnectTimeout)
	defer cancel()
	conn, resp, err := d.ws.DialContext(ctx, rawURL, h)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%w: the upgrade was answered %d %s", ErrUnreachable, resp.StatusCode, http.StatusText(resp.StatusCode))
		}
		if timedOut(ctx, err) {
			return nil, fmt.Errorf("%w: no upgrade within %s", ErrUnreachable, d.opts.ConnectTimeout)
		}
		return nil, fmt.Errorf("%w: %s", ErrUnreachable, scrub(err))
	}
	return conn, nil
}

// tcp dials an AudioSocket bot: tcp://host:port.
func (d *dialer) tcp(ctx context.Context, rawURL string) (net.Conn, error) {
	if err := d.check(rawURL, "tcp"); err != nil {
		return nil, err
	}
	u, _ := url.Parse(rawURL)
	ctx, cancel := context.WithTimeout(ctx, d.opts.ConnectTimeout)
	defer cancel()
	c, err := d.net.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		if timedOut(ctx, err) {
			return nil, fmt.Errorf("%w: no connection within %s", ErrUnreachable, d.opts.ConnectTimeout)
		}
		return nil, fmt.Errorf("%w: %s", ErrUnreachable, scrub(err))
	}
	return c, nil
}

// check refuses a URL of another scheme or a forbidden address before
// any connection (the policy's Control checks each connection again).
func (d *dialer) check(rawURL string, schemes ...string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: the url is not an absolute URL", ErrUnreachable)
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok {
		return fmt.Errorf("%w: scheme %q (want %v)", ErrUnreachable, u.Scheme, schemes)
	}
	if err := d.opts.Addresses.CheckURL(rawURL); err != nil {
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return nil
}

// scrub drops the URL (its query may hold a token) from a dial error.
func scrub(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Op + ": " + oe.Err.Error()
	}
	return err.Error()
}

// timedOut reports a dial that ran out of the connect timeout (the
// context's deadline or the handshake's).
func timedOut(ctx context.Context, err error) bool {
	var ne net.Error
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
