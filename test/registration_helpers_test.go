package test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// registrarUser is an account of the test registrar.
type registrarUser struct{ User, Password string }

// startRegistrar runs Debian's kamailio as a registrar (testdata/kamailio/
// registrar.cfg.tmpl) on a free loopback port, UDP and TCP, checking the
// users' passwords with the digest algorithm (MD5 or SHA-256).
func startRegistrar(t *testing.T, algorithm string, users map[string]string) *kamailio {
	t.Helper()
	bin, err := exec.LookPath("kamailio")
	if err != nil {
		bin = "/usr/sbin/kamailio"
	}
	_, err = os.Stat(bin)
	require.NoError(t, err, "kamailio must be installed (Debian kamailio: 'make deps' as root)")
	mods, _ := filepath.Glob("/usr/lib/*/kamailio/modules/registrar.so")
	require.NotEmpty(t, mods, "kamailio's registrar module is missing (Debian kamailio)")
	var list []registrarUser
	for u, p := range users {
		list = append(list, registrarUser{u, p})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].User < list[j].User })
	port := freeSIPPort(t)
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "kamailio", "registrar.cfg.tmpl"))
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "registrar.cfg")
	f, err := os.Create(cfg)
	require.NoError(t, err)
	require.NoError(t, tmpl.Execute(f, struct {
		Port      int
		MPath     string
		Algorithm string
		Users     []registrarUser
	}{port, filepath.Dir(mods[0]) + "/", algorithm, list}))
	require.NoError(t, f.Close())
	k := &kamailio{addr: fmt.Sprintf("127.0.0.1:%d", port), out: &syncWriter{}}
	ctx, cancel := context.WithCancel(context.Background())
	k.cmd = exec.CommandContext(ctx, bin, "-f", cfg, "-DD", "-E", "-m", "32", "-M", "4", "-P", filepath.Join(dir, "kamailio.pid"), "-Y", dir)
	k.cmd.Stdout, k.cmd.Stderr = k.out, k.out
	k.cmd.Cancel = func() error { return k.cmd.Process.Signal(syscall.SIGTERM) }
	k.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, k.cmd.Start())
	t.Cleanup(func() {
		cancel()
		k.cmd.Wait()
		if t.Failed() {
			t.Logf("kamailio registrar output (tail):\n%s", tail(k.out.String(), 8000))
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(k.out.String(), "udp: 127.0.0.1") }, 10*time.Second, 50*time.Millisecond,
		"kamailio did not start:\n%s", k.out.String())
	return k
}

// proxyCall places one call with sipp through the proxy at target to
// service (the fleet scenario: the route kept, BYE from us after holdMs).
func proxyCall(t *testing.T, target, service string, holdMs int) sippResult {
	t.Helper()
	_, err := exec.LookPath("sipp")
	require.NoError(t, err, "sipp must be installed (apt install sip-tester)")
	file := render(t, "fleet.xml.tmpl", struct {
		HoldMs int
		From   string
	}{holdMs, "7000"})
	tmp := t.TempDir()
	args := []string{target, "-sf", file, "-s", service, "-m", "1", "-l", "1", "-i", "127.0.0.1", "-p", fmt.Sprint(freeUDPPort(t)),
		"-mp", fmt.Sprint(freeUDPPort(t)), "-t", "u1", "-timeout", "30s", "-timeout_error", "-nostdin", "-trace_err",
		"-error_file", filepath.Join(tmp, "err.log")}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sipp", args...)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	errLog, _ := os.ReadFile(filepath.Join(tmp, "err.log"))
	return sippResult{out: string(out) + "\n" + string(errLog), err: err}
}

// registrationOf polls GET /v2/phone-numbers/{id} until ok accepts its
// registration, and returns it.
func registrationOf(t *testing.T, d *apptest.Daemon, id string, within time.Duration, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	var last map[string]any
	// Polls the API: nothing pushes a number's registration state.
	if !assert.Eventually(t, func() bool {
		n := d.JSON(t, "GET", "/v2/phone-numbers/"+id, d.OwnerKey, nil, 200)
		reg, _ := n["registration"].(map[string]any)
		last = reg
		return reg != nil && ok(reg)
	}, within, 50*time.Millisecond) {
		t.Fatalf("number %s: registration never as expected within %s; last: %v", id, within, last)
	}
	return last
}

func stateIs(s string) func(map[string]any) bool {
	return func(r map[string]any) bool { return r["state"] == s }
}

func netipAddrPort(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(s)
	require.NoError(t, err)
	return ap
}

// agentNumber creates an agent and a BYO-trunk number routed to it, and
// returns the number's id.
func agentNumber(t *testing.T, d *apptest.Daemon, number string) string {
	t.Helper()
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "registered " + number}, 200)
	n := d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "registered " + number,
		"phone_number": number, "agent_id": ag["agent_id"]}, 200)
	return n["phone_number"].(map[string]any)["phone_number_id"].(string)
}
