package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// procSample is one reading of a process's CPU time and memory.
type procSample struct {
	at      time.Time
	cpu     time.Duration // user + system
	rss     int64         // bytes (VmRSS)
	hwm     int64         // bytes (VmHWM, peak RSS)
	threads int
}

// readProc reads /proc/<pid>/stat and /proc/<pid>/status.
func readProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return s, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	s.cpu = time.Duration(ut+st) * time.Second / clockTicks
	fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fs[0], 10, 64)
		switch k {
		case "VmRSS":
			s.rss = n * 1024
		case "VmHWM":
			s.hwm = n * 1024
		case "Threads":
			s.threads = int(n)
		}
	}
	return s, sc.Err()
}

// readHost reads the machine's busy CPU time, all processes and the
// kernel (/proc/stat: user, nice, system, irq, softirq, steal), as a
// procSample's cpu.
func readHost() (procSample, error) {
	s := procSample{at: time.Now()}
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		n, _ := strconv.ParseInt(f[i], 10, 64)
		busy += n
	}
	s.cpu = time.Duration(busy) * time.Second / clockTicks
	return s, nil
}

// machine describes the host for the report.
func machine() string {
	model := "unknown CPU"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	var mem string
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		if l, _, ok := strings.Cut(string(raw), "\n"); ok {
			mem = strings.Join(strings.Fields(l)[1:], " ")
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s RAM", numCPU(), model, mem)
}
