package metrics

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// alertmanagerConfig is the Alertmanager configuration the README offers
// operators.
var alertmanagerConfig = filepath.Join("..", "..", "docs", "alertmanager.yml")

// TestAlertmanagerConfigRoutesEveryAlert checks docs/alertmanager.yml with
// amtool (Debian's prometheus-alertmanager package), and that each alert
// of docs/alerts.yml reaches the receiver named by its severity.
func TestAlertmanagerConfigRoutesEveryAlert(t *testing.T) {
	amtool := tool(t, "prometheus-alertmanager", "amtool")
	if out, err := exec.Command(amtool, "check-config", alertmanagerConfig).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
	alerts := severities(t)
	// An alert of another rules file without a severity is a ticket.
	alerts["SomeoneElsesAlert"] = ""
	for name, severity := range alerts {
		want := severity
		if want == "" {
			want = "ticket"
		}
		args := []string{"config", "routes", "test", "--config.file=" + alertmanagerConfig,
			"--verify.receivers=" + want, "alertname=" + name, "instance=replica-1:9090", "cluster=production"}
		if severity != "" {
			args = append(args, "severity="+severity)
		}
		out, err := exec.Command(amtool, args...).Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("%s (severity %q) goes to %q (%v), want %q", name, severity, got, err, want)
		}
	}
}

// severities is each alert of docs/alerts.yml with its severity label.
func severities(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	severity := regexp.MustCompile(`(?m)^\s+severity: (\S+)$`)
	alerts := map[string]string{}
	for _, rule := range regexp.MustCompile(`(?m)^\s+- alert: `).Split(string(b), -1)[1:] {
		name, _, _ := strings.Cut(rule, "\n")
		m := severity.FindStringSubmatch(rule)
		if m == nil {
			t.Fatalf("alert %s has no severity", name)
		}
		alerts[name] = m[1]
	}
	if len(alerts) < 15 {
		t.Fatalf("found %d alerts in %s: %v", len(alerts), alertRules, alerts)
	}
	return alerts
}

// amAlert is an alert as Alertmanager's API v2 takes and gives it.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status *struct {
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status,omitempty"`
}

// key names an alert by its labels, severity aside.
func (a amAlert) key() string {
	var parts []string
	for _, l := range []string{"cluster", "alertname", "instance", "route"} {
		if v := a.Labels[l]; v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " ")
}

// TestAlertmanagerConfigNotifiesOnceAndInhibitsSymptoms runs
// docs/alertmanager.yml in a real Alertmanager and sends it the alerts of
// a fleet's Postgres outage and of other causes with their symptoms: each
// symptom is inhibited on its cause's replica alone, and the outage's
// alerts of every replica are one group, one notification.
func TestAlertmanagerConfigNotifiesOnceAndInhibitsSymptoms(t *testing.T) {
	am := startAlertmanager(t)
	severity := severities(t)
	alert := func(cluster, name, instance, route string) amAlert {
		l := map[string]string{"cluster": cluster, "alertname": name, "severity": severity[name]}
		if instance != "" {
			l["instance"] = instance
		}
		if route != "" {
			l["route"] = route
		}
		return amAlert{Labels: l}
	}
	const p, s = "production", "staging"
	sent := []amAlert{
		// Postgres does not answer any replica of production.
		alert(p, "AdlinkClicksSpooled", "a", ""),
		alert(p, "AdlinkClicksSpooled", "b", ""),
		alert(p, "AdlinkClicksSpooled", "c", ""),
		alert(p, "AdlinkSlowRedirect", "a", ""),
		alert(p, "AdlinkSlowRedirect", "b", ""),
		alert(p, "AdlinkSlowClickRecord", "a", ""),
		alert(p, "AdlinkServerErrors", "a", "GET /v2/report"),
		alert(p, "AdlinkServerErrors", "b", "GET /v2/search/link"),
		// Replica d's own redirects are slow and fail, its readers leave.
		alert(p, "AdlinkSlowRedirect", "d", ""),
		alert(p, "AdlinkClientsGivingUp", "d", "GET /v1/redirect"),
		alert(p, "AdlinkClientsGivingUp", "d", "GET /v2/page/link"),
		alert(p, "AdlinkRedirectErrors", "d", ""),
		alert(p, "AdlinkServerErrors", "d", "GET /v1/redirect"),
		alert(p, "AdlinkServerErrors", "e", "GET /v1/redirect"),
		// Replica f's feeds fail; g is behind for another reason.
		alert(p, "AdlinkCatalogRefreshFailing", "f", ""),
		alert(p, "AdlinkCatalogBehind", "f", ""),
		alert(p, "AdlinkCatalogBehind", "g", ""),
		alert(p, "AdlinkCatalogEmpty", "g", ""),
		// No replica of staging serves its metrics, as one Prometheus
		// of a pair sees it: the other's alerts still go out.
		alert(s, "AdlinkMetricsAbsent", "", ""),
		alert(s, "AdlinkCatalogEmpty", "s", ""),
		alert(s, "AdlinkRetentionFailing", "s", ""),
	}
	inhibited := []string{
		"production AdlinkSlowRedirect a",
		"production AdlinkSlowRedirect b",
		"production AdlinkSlowClickRecord a",
		"production AdlinkServerErrors a GET /v2/report",
		"production AdlinkClientsGivingUp d GET /v1/redirect",
		"production AdlinkServerErrors d GET /v1/redirect",
		"production AdlinkCatalogBehind f",
	}
	for _, a := range sent {
		if a.Labels["severity"] == "" {
			t.Fatalf("%s is not an alert of %s", a.Labels["alertname"], alertRules)
		}
	}
	body, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(am+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: %s", resp.Status)
	}

	// The inhibitor takes the alerts in on its own goroutine; nothing
	// says when but its answers.
	var got []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		var alerts []amAlert
		getJSON(t, am+"/api/v2/alerts", &alerts)
		got = got[:0]
		for _, a := range alerts {
			if len(a.Status.InhibitedBy) > 0 {
				got = append(got, a.key())
			}
		}
		if len(alerts) == len(sent) && sameSet(got, inhibited) || time.Now().After(deadline) {
			if len(alerts) != len(sent) {
				t.Errorf("Alertmanager holds %d alerts, want %d", len(alerts), len(sent))
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sameSet(got, inhibited) {
		slices.Sort(got)
		t.Errorf("inhibited:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(inhibited, "\n  "))
	}

	var groups []struct {
		Labels   map[string]string     `json:"labels"`
		Receiver struct{ Name string } `json:"receiver"`
		Alerts   []amAlert             `json:"alerts"`
	}
	// Its dispatcher groups the alerts on a goroutine of its own too:
	// every alert is in one group once it has them all.
	for deadline := time.Now().Add(10 * time.Second); ; {
		groups = nil
		getJSON(t, am+"/api/v2/alerts/groups", &groups)
		n := 0
		for _, g := range groups {
			n += len(g.Alerts)
		}
		if n == len(sent) || time.Now().After(deadline) {
			if n != len(sent) {
				t.Errorf("Alertmanager's groups hold %d alerts, want %d", n, len(sent))
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	byName := map[string]int{}
	for _, g := range groups {
		name := g.Labels["alertname"]
		byName[name]++
		if want := map[string]string{"alertname": name, "cluster": g.Labels["cluster"]}; !maps.Equal(g.Labels, want) {
			t.Errorf("a group of %s is grouped by %v, want alertname and cluster", name, g.Labels)
		}
		if want := severity[name]; g.Receiver.Name != want {
			t.Errorf("the group of %s goes to %s, want %s", name, g.Receiver.Name, want)
		}
		if name == "AdlinkClicksSpooled" && len(g.Alerts) != 3 {
			t.Errorf("the group of the fleet's Postgres outage holds %d alerts, want the 3 replicas'", len(g.Alerts))
		}
	}
	if byName["AdlinkClicksSpooled"] != 1 {
		t.Errorf("the fleet's Postgres outage is %d groups, want 1", byName["AdlinkClicksSpooled"])
	}
	if byName["AdlinkCatalogEmpty"] != 2 {
		t.Errorf("the empty catalogs of production and staging are %d groups, want one each", byName["AdlinkCatalogEmpty"])
	}
}

// startAlertmanager runs docs/alertmanager.yml in an Alertmanager on a
// loopback port, alone (no cluster), until the test ends, and returns its
// base URL. Its receivers are never called: the test ends before the
// groups' first wait.
func startAlertmanager(t *testing.T) string {
	t.Helper()
	bin := tool(t, "prometheus-alertmanager", "prometheus-alertmanager", "alertmanager")
	// Port 0: Alertmanager takes a free port itself and logs it. A port
	// picked here and freed before it starts could be taken in between.
	cmd := exec.Command(bin, "--config.file="+alertmanagerConfig, "--storage.path="+t.TempDir(),
		"--web.listen-address=127.0.0.1:0", "--cluster.listen-address=")
	log := &listenLog{listening: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	// It says when it listens, and where; its log is the signal.
	select {
	case <-log.listening:
	case <-exited:
		t.Fatalf("alertmanager did not start:\n%s", log)
	case <-time.After(time.Minute):
		t.Fatalf("alertmanager did not say it listens within a minute:\n%s", log)
	}
	return "http://" + log.addr
}

// listening is Alertmanager's log line that says where it listens, its
// address whole once the line goes on.
var listening = regexp.MustCompile(`msg="Listening on" address=(\S+)\s`)

// listenLog is Alertmanager's log, closing listening once it listens,
// with addr its address.
type listenLog struct {
	mu        sync.Mutex
	buf       strings.Builder
	listening chan struct{}
	addr      string
}

func (l *listenLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() < 1<<16 {
		l.buf.Write(p)
	}
	if l.addr == "" {
		if m := listening.FindStringSubmatch(l.buf.String()); m != nil {
			l.addr = m[1]
			close(l.listening)
		}
	}
	return len(p), nil
}

func (l *listenLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// getJSON decodes the JSON answer of a GET of url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
