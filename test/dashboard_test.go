package test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"switchboard/app/apptest"
)

// exprs returns every "expr" string of a Grafana dashboard, however deep.
func exprs(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "expr" {
				out = append(out, s)
				continue
			}
			out = append(out, exprs(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, exprs(e)...)
		}
	}
	return out
}

// TestDashboardsNameExportedMetrics: deploy/grafana's dashboard is valid
// JSON whose queries name only metric families a running appliance
// exports (its registry, so also the families without a sample yet), and
// covers calls, setup, media health, turn latency, provider errors and
// webhook latency; deploy/prometheus's scrape configuration is valid YAML
// that scrapes /metrics.
func TestDashboardsNameExportedMetrics(t *testing.T) {
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), nil))
	exported := d.App.MetricNames()
	require.Contains(t, exported, "switchboard_turn_latency_seconds")

	raw, err := os.ReadFile("../deploy/grafana/switchboard.json")
	require.NoError(t, err)
	var dash map[string]any
	require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard is not valid JSON")
	require.NotEmpty(t, dash["title"])
	qs := exprs(dash)
	require.NotEmpty(t, qs)
	name := regexp.MustCompile(`switchboard_[a-z0-9_]+`)
	used := map[string]bool{}
	for _, q := range qs {
		for _, n := range name.FindAllString(q, -1) {
			base := n
			if !slices.Contains(exported, base) {
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if b := strings.TrimSuffix(n, suf); b != n && slices.Contains(exported, b) {
						base = b
					}
				}
			}
			require.Contains(t, exported, base, "the dashboard queries %s, which the appliance does not export (query %q)", n, q)
			used[base] = true
		}
	}
	for _, want := range []string{"switchboard_calls_active", "switchboard_calls_answered_total", "switchboard_sip_invites_total",
		"switchboard_media_loss_ratio", "switchboard_calls_one_way", "switchboard_turn_latency_seconds",
		"switchboard_provider_errors_total", "switchboard_webhook_attempt_seconds"} {
		require.True(t, used[want], "the dashboard has no panel on %s", want)
	}

	raw, err = os.ReadFile("../deploy/prometheus/prometheus.yml")
	require.NoError(t, err)
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &prom))
	require.Len(t, prom.ScrapeConfigs, 1)
	sc := prom.ScrapeConfigs[0]
	require.Equal(t, "/metrics", sc.MetricsPath)
	require.NotEmpty(t, sc.StaticConfigs[0].Targets)
	// What it scrapes is there, in the Prometheus text format.
	text := scrapeMetrics(t, d.URL)
	require.Contains(t, text, "# TYPE switchboard_calls_active gauge")
}
