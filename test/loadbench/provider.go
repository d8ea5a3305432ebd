package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// providerProc is the model provider stand-in (./test/loadbench/provider)
// running as its own process, so its CPU is not counted as the appliance's.
type providerProc struct {
	cmd  *exec.Cmd
	addr string
	done chan error
}

// startProvider builds the stand-in into tmp and starts it on a free
// loopback port.
func startProvider(ctx context.Context, tmp string) (*providerProc, error) {
	bin := filepath.Join(tmp, "provider")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/loadbench/provider")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the provider stand-in (run from the repository root): %w: %s", err, out)
	}
	p := &providerProc{cmd: exec.Command(bin, "-addr", "127.0.0.1:0"), done: make(chan error, 1)}
	logf, err := os.Create(filepath.Join(tmp, "provider.log"))
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
			return nil, fmt.Errorf("the provider stand-in printed no address (log: %s)", lastLines(filepath.Join(tmp, "provider.log")))
		}
		p.addr = a
		return p, nil
	case <-time.After(10 * time.Second):
		p.stop()
		return nil, fmt.Errorf("the provider stand-in did not start within 10s")
	}
}

func (p *providerProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
