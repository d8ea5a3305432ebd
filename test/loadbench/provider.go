package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// providerProc is a stand-in for the appliance's far end, running as its
// own process so its CPU is not counted as the appliance's: the model
// provider (./test/loadbench/provider) or the stream engine's echo bot
// (./test/loadbench/streambot).
type providerProc struct {
	cmd  *exec.Cmd
	addr string
	log  string
	done chan error
	once sync.Once
}

// startProvider builds the stand-in name (provider or streambot) into tmp
// and starts it on a free loopback port, with args after its own, under
// the scheduling policy sched (normal, or idle: SCHED_IDLE through chrt,
// which execs it, so every thread it starts inherits the policy).
func startProvider(ctx context.Context, tmp, name, sched string, args ...string) (*providerProc, error) {
	bin := filepath.Join(tmp, name)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/loadbench/"+name)
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the %s stand-in (run from the repository root): %w: %s", name, err, out)
	}
	argv := append([]string{bin, "-addr", "127.0.0.1:0"}, args...)
	switch sched {
	case "", "normal":
	case "idle":
		argv = append([]string{"chrt", "--idle", "0"}, argv...)
	default:
		return nil, fmt.Errorf("-standin-sched %q: want normal or idle", sched)
	}
	p := &providerProc{cmd: exec.Command(argv[0], argv[1:]...), log: filepath.Join(tmp, name+".log"), done: make(chan error, 1)}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = logf
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start the provider stand-in: %w", err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			addr <- strings.TrimSpace(sc.Text())
		}
		close(addr)
		for sc.Scan() {
		}
	}()
	go func() { p.done <- p.cmd.Wait(); logf.Close() }()
	select {
	case a, ok := <-addr:
		if !ok || a == "" {
			p.stop()
			return nil, fmt.Errorf("the provider stand-in printed no address (log: %s)", lastLines(p.log))
		}
		p.addr = a
		return p, nil
	case <-time.After(10 * time.Second):
		p.stop()
		return nil, fmt.Errorf("the provider stand-in did not start within 10s")
	}
}

// stop ends the stand-in (once) and returns the last line it logged (its
// tallies).
func (p *providerProc) stop() string {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return lastLine(p.log)
}

// lastLine is the last line of the file at path ("" when unreadable).
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
