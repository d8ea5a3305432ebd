package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// takeProfiles fetches the appliance's profiles from its pprof listener
// at addr into dir: cpu.pprof (8 s), heap.pprof, goroutines.txt and
// memstats.txt; with botAddr (the stream engine's echo bot) the bot's CPU
// profile over the same 8 s too, bot-cpu.pprof. It returns a line for the
// report (how many goroutines ran, where the files are).
func takeProfiles(ctx context.Context, addr, botAddr, dir string) string {
	get := func(addr, path, file string, timeout time.Duration) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			return nil, err
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			return nil, err
		}
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", path, res.Status)
		}
		return b, os.WriteFile(filepath.Join(dir, file), b, 0o644)
	}
	g, err := get(addr, "/debug/pprof/goroutine?debug=1", "goroutines.txt", 10*time.Second)
	if err != nil {
		return "profiles: " + err.Error()
	}
	goroutines := strings.TrimSpace(string(bytes.SplitN(g, []byte("\n"), 2)[0]))
	botErr := make(chan error, 1)
	go func() {
		if botAddr == "" {
			botErr <- nil
			return
		}
		_, err := get(botAddr, "/debug/pprof/profile?seconds=8", "bot-cpu.pprof", 20*time.Second)
		botErr <- err
	}()
	_, err = get(addr, "/debug/pprof/profile?seconds=8", "cpu.pprof", 20*time.Second)
	if berr := <-botErr; berr != nil && err == nil {
		err = fmt.Errorf("the echo bot's: %w", berr)
	}
	if err != nil {
		return "profiles: " + err.Error()
	}
	// Both heap profiles are taken after a collection (gc=1): the live
	// heap, not what the last cycle saw (the collections they force come
	// after the CPU profile). The text form ends with the runtime's
	// MemStats: heap, goroutine stacks, GC goal; where RSS goes.
	if _, err := get(addr, "/debug/pprof/heap?gc=1", "heap.pprof", 10*time.Second); err != nil {
		return "profiles: " + err.Error()
	}
	if _, err := get(addr, "/debug/pprof/heap?debug=1&gc=1", "memstats.txt", 10*time.Second); err != nil {
		return "profiles: " + err.Error()
	}
	files := "cpu.pprof (8 s), heap.pprof, goroutines.txt, memstats.txt"
	if botAddr != "" {
		files += ", bot-cpu.pprof (the echo bot's, the same 8 s)"
	}
	return fmt.Sprintf("%s; %s in %s", goroutines, files, dir)
}
