package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// flood is an API flood alongside the calls: workers send GET requests to
// path with key, paced to rate requests per second in total (as fast as
// they can when the appliance is slower), from the start of the calls to
// their end.
type flood struct {
	url, key string
	rate     int
	workers  int

	sent, ok, limited, other, failed atomic.Int64
	bytes                            atomic.Int64
	wall                             time.Duration
}

// run floods until ctx ends.
func (f *flood) run(ctx context.Context) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = f.workers
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	tokens := make(chan struct{}, f.rate)
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // pacing: one tick every 5 ms releases rate/200 requests
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		debt := 0.0
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				debt += float64(f.rate) / 200
				for ; debt >= 1; debt-- {
					select {
					case tokens <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	for range f.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tokens:
				}
				f.one(ctx, c)
			}
		}()
	}
	wg.Wait()
	f.wall = time.Since(start)
}

func (f *flood) one(ctx context.Context, c *http.Client) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+f.key)
	f.sent.Add(1)
	res, err := c.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			f.failed.Add(1)
		}
		return
	}
	n, _ := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
		f.ok.Add(1)
		f.bytes.Add(n)
	case http.StatusTooManyRequests:
		f.limited.Add(1)
	default:
		f.other.Add(1)
	}
}

// summary is the flood's line of the report.
func (f *flood) summary() string {
	secs := f.wall.Seconds()
	if secs <= 0 {
		return "-"
	}
	avg := int64(0)
	if ok := f.ok.Load(); ok > 0 {
		avg = f.bytes.Load() / ok
	}
	return fmt.Sprintf("%.0f req/s sent (asked %d/s, %d workers): %d × 200 (%.0f/s, %d B each), %d × 429, %d other, %d transport errors",
		float64(f.sent.Load())/secs, f.rate, f.workers, f.ok.Load(), float64(f.ok.Load())/secs, avg, f.limited.Load(), f.other.Load(), f.failed.Load())
}
