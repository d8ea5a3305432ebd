package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"switchboard/media"
)

type options struct {
	calls    int
	duration time.Duration
	rate     float64
	binary   string
	pcap     string
	// audio is what the callers say: continuous (espeak-ng speech with
	// no pause a VAD would end a turn at) or pcap (the -pcap capture).
	audio string
	// stt is the appliance's speech.stt_engine: pocketsphinx (its
	// default: the transcript fallback on) or none.
	stt     string
	rtpBase int
	keep    bool
	engine  string
	// The API flood alongside the calls (apiRate 0: none).
	apiRate, apiWorkers int
	apiPath             string
	unlimitedKeys       bool
	// codec is the callers' G.711 (pcma or pcmu).
	codec string
	// providerFormat is the upstream engine's audio with the provider
	// stand-in: pcm (PCM16 24 kHz) or pcmu.
	providerFormat string
	// cps > 0 measures call setup instead: that many calls a second, each
	// INVITE, answer, ACK, BYE, for duration.
	cps float64
	// profile, when set, is a directory for the appliance's pprof profiles
	// taken at the steady state (CPU for 8 s, heap, goroutines).
	profile string
	// standinSched is the stand-in's (provider, streambot) scheduling
	// policy: normal, or idle (SCHED_IDLE: it stands for another machine,
	// so it takes only the CPU the appliance and sipp leave).
	standinSched string
}

func numCPU() int { return runtime.NumCPU() }

func freePort(network string) (int, error) {
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// run starts the appliance, runs sipp and collects the figures.
func run(ctx context.Context, o options) (*report, error) {
	if o.calls <= 0 || o.duration <= 0 || o.rate <= 0 {
		return nil, errors.New("-calls, -duration and -rate must be positive")
	}
	codec, ok := map[string]media.Codec{"pcma": media.PCMA, "pcmu": media.PCMU}[o.codec]
	if !ok {
		return nil, fmt.Errorf("-codec %q: want pcma or pcmu", o.codec)
	}
	if o.audio != "continuous" && o.audio != "pcap" {
		return nil, fmt.Errorf("-audio %q: want continuous or pcap", o.audio)
	}
	if o.stt != "pocketsphinx" && o.stt != "none" {
		return nil, fmt.Errorf("-stt %q: want pocketsphinx or none", o.stt)
	}
	if o.providerFormat != "pcm" && o.providerFormat != "pcmu" {
		return nil, fmt.Errorf("-provider-format %q: want pcm or pcmu", o.providerFormat)
	}
	if o.cps > 0 {
		// Call setup: as many calls may be live as a second brings.
		o.calls = max(o.calls, int(o.cps))
	}
	for _, tool := range []string{"sipp"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is required (apt install sip-tester): %w", tool, err)
		}
	}
	if _, err := os.Stat(o.binary); err != nil {
		return nil, fmt.Errorf("switchboard binary: %w (run make build, or pass -binary)", err)
	}
	tmp, err := os.MkdirTemp("", "loadbench")
	if err != nil {
		return nil, err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "loadbench: keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	audio := filepath.Join(tmp, "audio.g711")
	var audioLen, audioPause time.Duration
	switch {
	case o.cps > 0: // call setup: no media
	case o.audio == "continuous":
		audioLen, audioPause, err = renderSpeech(ctx, audio, codec)
	default:
		audioLen, err = pcapToRaw(o.pcap, audio, codec)
	}
	if err != nil {
		return nil, err
	}
	scen := filepath.Join(tmp, "load.xml")
	body := scenario(audio, o.duration, codec)
	if o.cps > 0 {
		body = scenario("", 0, codec)
	}
	if err := os.WriteFile(scen, []byte(body), 0o600); err != nil {
		return nil, err
	}

	var (
		prov     *providerProc
		botPprof string
	)
	env := []string{}
	switch o.engine {
	case "echo", "loopback":
	case "upstream":
		if prov, err = startProvider(ctx, tmp, "provider", o.standinSched); err != nil {
			return nil, err
		}
		defer prov.stop()
		env = append(env, "SWITCHBOARD_UPSTREAM_URL=ws://"+prov.addr+"/v1/realtime",
			"SWITCHBOARD_UPSTREAM_AUDIO_FORMAT="+o.providerFormat, "SWITCHBOARD_UPSTREAM_API_KEY=loadbench")
	case "stream":
		// With -profile the echo bot's CPU is profiled too (bot-cpu.pprof).
		var args []string
		if o.profile != "" {
			port, err := freePort("tcp")
			if err != nil {
				return nil, err
			}
			botPprof = fmt.Sprintf("127.0.0.1:%d", port)
			args = []string{"-pprof", botPprof}
		}
		if prov, err = startProvider(ctx, tmp, "streambot", o.standinSched, args...); err != nil {
			return nil, err
		}
		defer prov.stop()
	default:
		return nil, fmt.Errorf("-engine %q: want echo, loopback, upstream or stream", o.engine)
	}
	var pprofAddr string
	if o.profile != "" {
		port, err := freePort("tcp")
		if err != nil {
			return nil, err
		}
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
		env = append(env, "SWITCHBOARD_PPROF_ADDR="+pprofAddr)
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return nil, err
		}
	}
	app, err := startAppliance(ctx, o, tmp, env)
	if err != nil {
		return nil, err
	}
	defer app.stop()

	number := "18005550100" // the demo agent, seeded on first start
	switch o.engine {
	case "echo":
	case "stream":
		if number, err = streamNumber(ctx, app.url, filepath.Join(tmp, "data", "owner.key"), "ws://"+prov.addr+"/media"); err != nil {
			return nil, err
		}
	default:
		if number, err = agentNumber(ctx, app.url, filepath.Join(tmp, "data", "owner.key"), o.engine); err != nil {
			return nil, err
		}
	}
	rep := &report{opts: o, machine: machine(), audioLen: audioLen, audioPause: audioPause}
	time.Sleep(time.Second)
	if rep.idle, err = readProc(app.cmd.Process.Pid); err != nil {
		return nil, err
	}
	before, err := scrape(ctx, app.url)
	if err != nil {
		return nil, err
	}

	stat := filepath.Join(tmp, "sipp_stat.csv")
	total, rate := o.calls, o.rate
	if o.cps > 0 {
		total, rate = int(o.cps*o.duration.Seconds()), o.cps
	}
	args := []string{app.sip, "-sf", scen, "-s", number, "-t", "u1",
		"-i", "127.0.0.1", "-mi", "127.0.0.1",
		"-m", strconv.Itoa(total), "-l", strconv.Itoa(o.calls),
		"-r", strconv.FormatFloat(rate, 'f', -1, 64), "-rp", "1000",
		"-timeout", fmt.Sprintf("%ds", int((o.duration + 2*time.Minute).Seconds())), "-timeout_error",
		"-nostdin", "-trace_stat", "-stf", stat, "-fd", "1",
		"-trace_err", "-error_file", filepath.Join(tmp, "sipp_err.log"),
		"-max_socket", strconv.Itoa(o.calls*2 + 100),
	}
	sipp := exec.CommandContext(ctx, "sipp", args...)
	sipp.Dir = tmp
	sippOut, err := os.Create(filepath.Join(tmp, "sipp.out"))
	if err != nil {
		return nil, err
	}
	defer sippOut.Close()
	sipp.Stdout, sipp.Stderr = sippOut, sippOut
	rep.cmdline = "sipp " + strings.Join(args, " ")
	if rep.start, err = readProc(app.cmd.Process.Pid); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := sipp.Start(); err != nil {
		return nil, fmt.Errorf("start sipp: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- sipp.Wait() }()
	stopFlood := func() {}
	if o.apiRate > 0 {
		key, err := os.ReadFile(filepath.Join(tmp, "data", "owner.key"))
		if err != nil {
			return nil, fmt.Errorf("owner key: %w", err)
		}
		rep.flood = &flood{url: app.url + o.apiPath, key: strings.TrimSpace(string(key)), rate: o.apiRate, workers: o.apiWorkers}
		fctx, cancel := context.WithCancel(ctx)
		floodDone := make(chan struct{})
		go func() { defer close(floodDone); rep.flood.run(fctx) }()
		stopFlood = func() { cancel(); <-floodDone }
	}
	defer func() { stopFlood() }()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var sippErr error
	profiling, profDone := false, make(chan struct{})
	defer func() {
		if profiling {
			<-profDone
		}
	}()
loop:
	for {
		select {
		case sippErr = <-done:
			break loop
		case <-tick.C:
			s := sample{}
			if s.app, err = readProc(app.cmd.Process.Pid); err != nil {
				return rep, fmt.Errorf("appliance: %w", err)
			}
			s.sipp, _ = readProc(sipp.Process.Pid)
			s.host, _ = readHost()
			if prov != nil {
				s.prov, _ = readProc(prov.cmd.Process.Pid)
			}
			if m, err := scrape(ctx, app.url); err == nil {
				s.active = int(m["switchboard_calls_active"])
			}
			rep.samples = append(rep.samples, s)
			steady := float64(s.active) >= 0.95*float64(o.calls) || (o.cps > 0 && time.Since(start) > o.duration/3)
			// The calls' memory peaks just before the first of them hang
			// up (their buffers have grown all along): the CPU profile's
			// 8 s end then, and the heap is read at the peak.
			late := o.cps > 0 || time.Since(start) >= o.duration-10*time.Second
			if pprofAddr != "" && !profiling && steady && late {
				profiling = true
				go func() {
					defer close(profDone)
					rep.profiled = takeProfiles(ctx, pprofAddr, botPprof, o.profile)
				}()
			}
		}
	}
	rep.wall = time.Since(start)
	rep.end, _ = readProc(app.cmd.Process.Pid)
	stopFlood()
	rep.sippExit = exitCode(sippErr)
	// Calls end on the appliance right after the BYE; wait for the gauge.
	var after metrics
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if after, err = scrape(ctx, app.url); err == nil && after["switchboard_calls_active"] == 0 {
			break
		}
	}
	if err != nil {
		return rep, err
	}
	rep.final, _ = readProc(app.cmd.Process.Pid)
	if prov != nil {
		rep.provFinal, _ = readProc(prov.cmd.Process.Pid)
		rep.provTally = prov.stop()
	}
	rep.before, rep.after = before, after
	rep.ok, rep.failed = sippCounts(stat)
	rep.leftActive = int(after["switchboard_calls_active"])
	rep.logged = logSummary(filepath.Join(tmp, "switchboard.log"))
	if (rep.sippExit != 0 && rep.sippExit != 1) || rep.ok < 0 {
		return rep, fmt.Errorf("sipp exited %d: see %s", rep.sippExit, filepath.Join(tmp, "sipp.out"))
	}
	return rep, nil
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// sippCounts reads the cumulative successful and failed calls from the
// last line of sipp's -trace_stat CSV.
func sippCounts(path string) (ok, failed int) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return -1, -1
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) < 2 {
		return -1, -1
	}
	head, last := strings.Split(lines[0], ";"), strings.Split(lines[len(lines)-1], ";")
	ok, failed = -1, -1
	for i, h := range head {
		if i >= len(last) {
			break
		}
		switch h {
		case "SuccessfulCall(C)":
			ok, _ = strconv.Atoi(last[i])
		case "FailedCall(C)":
			failed, _ = strconv.Atoi(last[i])
		}
	}
	return ok, failed
}

// appliance is the switchboard process under test.
type appliance struct {
	cmd  *exec.Cmd
	url  string
	sip  string
	done chan error
}

func startAppliance(ctx context.Context, o options, tmp string, env []string) (*appliance, error) {
	httpPort, err := freePort("tcp")
	if err != nil {
		return nil, err
	}
	sipPort, err := freePort("udp")
	if err != nil {
		return nil, err
	}
	a := &appliance{url: fmt.Sprintf("http://127.0.0.1:%d", httpPort), sip: fmt.Sprintf("127.0.0.1:%d", sipPort), done: make(chan error, 1)}
	a.cmd = exec.Command(o.binary, "serve",
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort), "--sip-addr", a.sip,
		"--rtp-ports", fmt.Sprintf("%d-%d", o.rtpBase, o.rtpBase+4*o.calls+3),
		"--max-calls", strconv.Itoa(2*o.calls), "--log-format", "json", "--log-level", "warn")
	// The appliance as an operator runs it: its default STT engine
	// (pocketsphinx) transcribes the turns the model does not, unless
	// -stt none turns the fallback off.
	a.cmd.Env = append(os.Environ(), "SWITCHBOARD_DATA_DIR="+filepath.Join(tmp, "data"), "SWITCHBOARD_STT_ENGINE="+o.stt)
	if o.unlimitedKeys {
		a.cmd.Env = append(a.cmd.Env, "SWITCHBOARD_KEYS_DEFAULT_QPS=0", "SWITCHBOARD_KEYS_DEFAULT_QPM=0")
	}
	a.cmd.Env = append(a.cmd.Env, env...)
	logf, err := os.Create(filepath.Join(tmp, "switchboard.log"))
	if err != nil {
		return nil, err
	}
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	if err := a.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start switchboard: %w", err)
	}
	go func() { a.done <- a.cmd.Wait(); logf.Close() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if res, err := http.Get(a.url + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return a, nil
			}
		}
		select {
		case err := <-a.done:
			a.done <- err
			return nil, fmt.Errorf("switchboard exited: %v (log: %s)", err, lastLines(filepath.Join(tmp, "switchboard.log")))
		case <-ctx.Done():
			a.stop()
			return nil, ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			a.stop()
			return nil, errors.New("switchboard not ready within 30s")
		}
	}
}

func (a *appliance) stop() {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

func lastLines(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 5 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// streamNumber creates, through the appliance's API, a number routed to
// the echo bot's stream at url and returns the number's digits to dial.
func streamNumber(ctx context.Context, base, keyFile, url string) (string, error) {
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return "", fmt.Errorf("owner key: %w", err)
	}
	b, _ := json.Marshal(map[string]any{"origin": "byo_trunk", "name": "loadbench stream", "phone_number": "+14155550150",
		"stream": map[string]any{"url": url}})
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v2/phone-numbers", bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(key)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return "", fmt.Errorf("POST /v2/phone-numbers: %d", res.StatusCode)
	}
	return "14155550150", nil
}

// agentNumber creates, through the appliance's API, an agent on engine
// (loopback: the line test; upstream: the provider stand-in) and a number
// routed to it, and returns the number's digits to dial.
func agentNumber(ctx context.Context, base, keyFile, engine string) (string, error) {
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return "", fmt.Errorf("owner key: %w", err)
	}
	post := func(path string, body any) (map[string]any, error) {
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(key)))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil || res.StatusCode != 200 {
			return nil, fmt.Errorf("POST %s: %d %v", path, res.StatusCode, m)
		}
		return m, nil
	}
	ag, err := post("/v1/agents", map[string]any{"name": "loadbench " + engine, "engine": engine})
	if err != nil {
		return "", err
	}
	if _, err := post("/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "loadbench " + engine,
		"phone_number": "+14155550150", "agent_id": ag["agent_id"]}); err != nil {
		return "", err
	}
	return "14155550150", nil
}
