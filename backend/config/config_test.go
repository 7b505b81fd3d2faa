package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// demoEnv is m with the demo partner on, unless m says otherwise: a
// configuration needs partners.
func demoEnv(m map[string]string) map[string]string {
	out := map[string]string{"ADLINK_DEMO": "true"}
	maps.Copy(out, m)
	return out
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(*Config)
	}{
		{name: "defaults", want: func(c *Config) {}},
		{
			name: "env",
			env: map[string]string{
				"ADLINK_ADDR": "0.0.0.0:9000", "ADLINK_DATA_DIR": "/var/lib/adlink",
				"ADLINK_CATALOG": "a.jsonl, b.csv", "ADLINK_PARTNERS": "p.json",
				"ADLINK_FETCH_ALLOW_PRIVATE": "true", "ADLINK_TRUSTED_PROXIES": "10.0.0.0/8",
				"ADLINK_COUNTRY_HEADER": "X-Country", "ADLINK_REDIRECT_URL": "https://r.example.com/",
				"ADLINK_ADMIN_HOSTS": "adlink-1.internal, adlink-1.internal.example.",
			},
			want: func(c *Config) {
				c.AdminHosts = []string{"adlink-1.internal", "adlink-1.internal.example."}
				c.Addr, c.DataDir = "0.0.0.0:9000", "/var/lib/adlink"
				c.Catalogs, c.PartnersFile = []string{"a.jsonl", "b.csv"}, "p.json"
				c.FetchAllowPrivate = true
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
				c.CountryHeader, c.RedirectURL = "X-Country", "https://r.example.com"
			},
		},
		{
			name: "flags win over env",
			args: []string{"-addr", "127.0.0.1:0", "-catalog", "x.jsonl", "-catalog", "y.jsonl", "-trusted-proxies", "192.168.1.7/24,::1/128", "-fetch-allow-private"},
			env:  map[string]string{"ADLINK_ADDR": "0.0.0.0:9000", "ADLINK_CATALOG": "a.jsonl"},
			want: func(c *Config) {
				c.Addr, c.RedirectURL = "127.0.0.1:0", "http://127.0.0.1:0"
				c.Catalogs = []string{"x.jsonl", "y.jsonl"}
				c.FetchAllowPrivate = true
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24"), netip.MustParsePrefix("::1/128")}
			},
		},
		{
			name: "rate limits",
			args: []string{"-rate-key", "5", "-rate-ip-burst", "3", "-rate-pages", "0.25", "-rate-key-network-share", "0.5"},
			env: map[string]string{"ADLINK_RATE_KEY": "9", "ADLINK_RATE_KEY_BURST": "11", "ADLINK_RATE_IP": "1.5", "ADLINK_RATE_PAGES_BURST": "4",
				"ADLINK_RATE_KEY_NETWORK_SHARE": "0.1", "ADLINK_RATE_PAGES_NETWORK_SHARE": "1"},
			want: func(c *Config) {
				c.KeyRate, c.KeyBurst, c.KeyNetworkShare = 5, 11, 0.5
				c.IPRate, c.IPBurst = 1.5, 3
				c.PageRate, c.PageBurst, c.PageNetworkShare = 0.25, 4, 1
			},
		},
		{
			name: "network daily clicks from the environment",
			env:  map[string]string{"ADLINK_NETWORK_DAILY_CLICKS": "7"},
			want: func(c *Config) { c.NetworkDailyClicks = 7 },
		},
		{
			name: "network daily clicks, the flag wins",
			args: []string{"-network-daily-clicks", "200"},
			env:  map[string]string{"ADLINK_NETWORK_DAILY_CLICKS": "7"},
			want: func(c *Config) { c.NetworkDailyClicks = 200 },
		},
		{
			name: "prefix daily clicks, the flag wins",
			args: []string{"-prefix-daily-clicks", "0"},
			env:  map[string]string{"ADLINK_PREFIX_DAILY_CLICKS": "70"},
			want: func(c *Config) { c.PrefixDailyClicks = 0 },
		},
		{
			name: "IPv4 prefix daily clicks from the environment",
			env:  map[string]string{"ADLINK_IPV4_PREFIX_DAILY_CLICKS": "40"},
			want: func(c *Config) { c.IPv4PrefixDailyClicks = 40 },
		},
		{
			name: "IPv4 prefix daily clicks, the flag wins",
			args: []string{"-ipv4-prefix-daily-clicks", "0"},
			env:  map[string]string{"ADLINK_IPV4_PREFIX_DAILY_CLICKS": "40"},
			want: func(c *Config) { c.IPv4PrefixDailyClicks = 0 },
		},
		{
			name: "prefix ad daily clicks from the environment",
			env:  map[string]string{"ADLINK_PREFIX_AD_DAILY_CLICKS": "3"},
			want: func(c *Config) { c.PrefixAdDailyClicks = 3 },
		},
		{
			name: "prefix ad daily clicks, the flag wins",
			args: []string{"-prefix-ad-daily-clicks", "0"},
			env:  map[string]string{"ADLINK_PREFIX_AD_DAILY_CLICKS": "3"},
			want: func(c *Config) { c.PrefixAdDailyClicks = 0 },
		},
		{
			name: "click keys",
			args: []string{"-click-ttl", "2h"},
			env: map[string]string{"ADLINK_CLICK_KEYS": "new:" + strings.Repeat("A", 43) + ",old:" + strings.Repeat("_", 22),
				"ADLINK_CLICK_TTL": "1h", "ADLINK_SITE_TOKEN_TTL": "15m", "ADLINK_IMPRESSION_WINDOW": "10m"},
			want: func(c *Config) {
				c.ClickKeys = []clicks.Key{{ID: "new", Secret: make([]byte, 32)}, {ID: "old", Secret: bytes.Repeat([]byte{0xff}, 16)}}
				c.ClickTTL, c.SiteTokenTTL, c.ImpressionWindow = 2*time.Hour, 15*time.Minute, 10*time.Minute
			},
		},
		{
			name: "postgres, the flag wins",
			args: []string{"-postgres", "postgres://adlink@db.internal/adlink"},
			env:  map[string]string{"ADLINK_POSTGRES_URL": "postgres://other/x"},
			want: func(c *Config) { c.PostgresURL = "postgres://adlink@db.internal/adlink" },
		},
		{
			name: "postgres from the environment",
			env:  map[string]string{"ADLINK_POSTGRES_URL": "host=/run/postgresql dbname=adlink"},
			want: func(c *Config) { c.PostgresURL = "host=/run/postgresql dbname=adlink" },
		},
		{
			name: "log level",
			env:  map[string]string{"ADLINK_LOG_LEVEL": "warn"},
			args: []string{"-log-level", "DEBUG"},
			want: func(c *Config) { c.LogLevel = slog.LevelDebug },
		},
		{
			name: "partners without the demo",
			args: []string{"-demo=false", "-partners", "p.json"},
			want: func(c *Config) { c.Demo, c.PartnersFile = false, "p.json" },
		},
		{
			name: "demo flag",
			args: []string{"-demo"},
			env:  map[string]string{"ADLINK_DEMO": "false"},
			want: func(c *Config) {},
		},
		{
			name: "retention from the environment, exports beside the data",
			env:  map[string]string{"ADLINK_RETENTION": "720h", "ADLINK_DATA_DIR": "/var/lib/adlink"},
			want: func(c *Config) {
				c.Retention, c.DataDir, c.ExportDir = 720*time.Hour, "/var/lib/adlink", "/var/lib/adlink/export"
			},
		},
		{
			name: "retention off, exports elsewhere, the flags win",
			args: []string{"-retention", "0", "-export-dir", "/srv/exports"},
			env:  map[string]string{"ADLINK_RETENTION": "720h", "ADLINK_EXPORT_DIR": "/tmp/x"},
			want: func(c *Config) { c.Retention, c.ExportDir = 0, "/srv/exports" },
		},
		{
			name: "retention host from the environment",
			env:  map[string]string{"ADLINK_RETENTION_HOST": "adlink-2.internal"},
			want: func(c *Config) { c.RetentionHost = "adlink-2.internal" },
		},
		{
			name: "retention host flag wins",
			args: []string{"-retention-host", "adlink-3"},
			env:  map[string]string{"ADLINK_RETENTION_HOST": "adlink-2.internal"},
			want: func(c *Config) { c.RetentionHost = "adlink-3" },
		},
		{
			name: "redis from the environment",
			env:  map[string]string{"ADLINK_REDIS_URL": "redis://:pw@10.0.0.5:6379/2"},
			want: func(c *Config) { c.RedisURL = "redis://:pw@10.0.0.5:6379/2" },
		},
		{
			name: "redis flag wins",
			args: []string{"-redis", "rediss://r.internal:6380/0"},
			env:  map[string]string{"ADLINK_REDIS_URL": "redis://10.0.0.5:6379/2"},
			want: func(c *Config) { c.RedisURL = "rediss://r.internal:6380/0" },
		},
		{
			name: "a Redis Cluster from the environment",
			env:  map[string]string{"ADLINK_REDIS_URL": "rediss-cluster://:pw@10.0.0.5:7000,10.0.0.6:7000/?read_timeout=1s"},
			want: func(c *Config) { c.RedisURL = "rediss-cluster://:pw@10.0.0.5:7000,10.0.0.6:7000/?read_timeout=1s" },
		},
		{
			name: "page lease from the environment",
			env:  map[string]string{"ADLINK_PAGE_LEASE": "8s"},
			want: func(c *Config) { c.PageLease = 8 * time.Second },
		},
		{
			name: "page lease flag wins",
			args: []string{"-page-lease", "3s"},
			env:  map[string]string{"ADLINK_PAGE_LEASE": "8s"},
			want: func(c *Config) { c.PageLease = 3 * time.Second },
		},
		{
			name: "migrations' lock timeout from the environment",
			env:  map[string]string{"ADLINK_POSTGRES_LOCK_TIMEOUT": "2s"},
			want: func(c *Config) { c.PostgresLockTimeout = 2 * time.Second },
		},
		{
			name: "migrations' lock timeout flag wins",
			args: []string{"-postgres-lock-timeout", "500ms"},
			env:  map[string]string{"ADLINK_POSTGRES_LOCK_TIMEOUT": "2s"},
			want: func(c *Config) { c.PostgresLockTimeout = 500 * time.Millisecond },
		},
		{
			name: "migrations' wait from the environment",
			env:  map[string]string{"ADLINK_POSTGRES_MIGRATE_WAIT": "1h"},
			want: func(c *Config) { c.PostgresMigrateWait = time.Hour },
		},
		{
			name: "migrations' wait flag wins, 0 for no bound",
			args: []string{"-postgres-migrate-wait", "0"},
			env:  map[string]string{"ADLINK_POSTGRES_MIGRATE_WAIT": "1h"},
			want: func(c *Config) { c.PostgresMigrateWait = 0 },
		},
		{
			name: "wildcard listen address",
			args: []string{"-addr", ":9090"},
			want: func(c *Config) { c.Addr, c.RedirectURL = ":9090", "http://localhost:9090" },
		},
		{
			name: "unspecified IPv6 listen address",
			args: []string{"-addr", "[::]:9090"},
			want: func(c *Config) { c.Addr, c.RedirectURL = "[::]:9090", "http://localhost:9090" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(tt.args, env(demoEnv(tt.env)), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			want.RedirectURL = "http://localhost:8080"
			want.Demo = true
			tt.want(&want)
			if want.ExportDir == "" {
				want.ExportDir = filepath.Join(want.DataDir, "export")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Load =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	c, err := Load(
		[]string{"-addr", "nohostport", "-redirect-url", "ftp://x", "-nope", "-trusted-proxies", "10.0.0.1,bogus", "-country-header", " ",
			"-rate-key", "0", "-rate-ip", "fast", "-rate-ip-burst", "0", "-rate-pages", "-1", "stray", "-click-keys", "k1:c2hvcnQ",
			"-=x", "-site-token-ttl", "0s", "-partners", "p.json", "-rate-key-network-share", "1.5", "-network-daily-clicks", "0", "-prefix-daily-clicks", "-1",
			"-ipv4-prefix-daily-clicks", "-3", "-prefix-ad-daily-clicks", "-2",
			"-retention", "1h", "-impression-window", "90s", "-impression-prefix-networks", "-2", "-redis", "http://:hunter2@cache:6379",
			"-admin-hosts", "ok.example,http://a.example,b.example:9464,-c.example,d..example"},
		env(map[string]string{"ADLINK_FETCH_ALLOW_PRIVATE": "maybe", "ADLINK_DEMO": "yes please", "ADLINK_RATE_KEY_BURST": "lots",
			"ADLINK_LOG_LEVEL": "loud", "ADLINK_CLICK_TTL": "a day", "ADLINK_RETENTION": "forever", "ADLINK_RATE_PAGES_NETWORK_SHARE": "0",
			"ADLINK_IPV4_PREFIX_DAILY_CLICKS": "a thousand", "ADLINK_PREFIX_AD_DAILY_CLICKS": "ten"}), io.Discard)
	if err == nil {
		t.Fatal("Load accepted a bad configuration")
	}
	for _, want := range []string{"ADLINK_FETCH_ALLOW_PRIVATE", "ADLINK_DEMO", `"10.0.0.1"`, `"bogus"`, "addr", "redirect-url", "country-header",
		"ADLINK_RATE_KEY_BURST", "ADLINK_LOG_LEVEL", "rate-key 0", `invalid value "fast" for flag -rate-ip`, "rate-ip-burst 0", "rate-pages -1",
		"flag provided but not defined: -nope", `unexpected argument "stray"`, "bad flag syntax: -=x",
		`click key "k1": secret of 5 bytes`, "ADLINK_CLICK_TTL", "site-token-ttl 0s", "rate-key-network-share 1.5", "rate-pages-network-share 0:", "network-daily-clicks 0", "prefix-daily-clicks -1",
		"ipv4-prefix-daily-clicks -3", `ADLINK_IPV4_PREFIX_DAILY_CLICKS="a thousand": want a whole number`,
		"prefix-ad-daily-clicks -2", `ADLINK_PREFIX_AD_DAILY_CLICKS="ten": want a whole number`,
		"impression-window 1m30s: want whole minutes", "impression-prefix-networks -2: want 0", "ADLINK_RETENTION", "retention 1h0m0s: want 0", "redis: want a redis://, rediss://, redis-cluster:// or rediss-cluster:// URL",
		`admin-hosts "http://a.example"`, `admin-hosts "b.example:9464"`, `admin-hosts "-c.example"`, `admin-hosts "d..example"`} {
		if n := strings.Count(err.Error(), want); n != 1 {
			t.Errorf("error mentions %s %d times, want once:\n%v", want, n, err)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows the Redis password:\n%v", err)
	}
	// Parsing goes on past every bad flag, which keeps its value.
	if c.PartnersFile != "p.json" || c.SiteTokenTTL != 0 || c.IPRate != Default().IPRate {
		t.Errorf("the flags after the bad ones are not read: %+v", c)
	}
}

// A lease shorter than a second would be renewed more often than a
// worker can, and take pages from workers that are alive.
func TestLoadRefusesAShortPageLease(t *testing.T) {
	for _, args := range [][]string{{"-page-lease", "500ms"}, {"-page-lease", "0"}, {"-page-lease", "-5s"}} {
		_, err := Load(args, env(demoEnv(nil)), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "page-lease") || !strings.Contains(err.Error(), "want at least 1s") {
			t.Errorf("Load %q = %v, want the page-lease named", args, err)
		}
	}
}

// A bound on the reports' rows below the largest report's would refuse
// that report for ever; 0 is no bound.
func TestLoadReportRows(t *testing.T) {
	for _, args := range [][]string{{"-report-rows", "1000"}, {"-report-rows", "-1"}} {
		_, err := Load(args, env(demoEnv(nil)), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "report-rows") {
			t.Errorf("Load %q = %v, want the report-rows named", args, err)
		}
	}
	for _, v := range []string{"0", "200000", "5000000"} {
		c, err := Load(nil, env(demoEnv(map[string]string{"ADLINK_REPORT_ROWS": v})), io.Discard)
		if err != nil || strconv.Itoa(c.ReportRows) != v {
			t.Errorf("ADLINK_REPORT_ROWS=%s: %d, %v", v, c.ReportRows, err)
		}
	}
}

// A lock timeout of 0 is none in Postgres: a migration would wait, and
// hold up the replicas' queries, for as long as a transaction holds it.
func TestLoadRefusesNoLockTimeout(t *testing.T) {
	for _, args := range [][]string{{"-postgres-lock-timeout", "0"}, {"-postgres-lock-timeout", "-1s"}, {"-postgres-lock-timeout", "1ms"}} {
		_, err := Load(args, env(demoEnv(nil)), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "postgres-lock-timeout") {
			t.Errorf("Load %q = %v, want the postgres-lock-timeout named", args, err)
		}
	}
}

func TestLoadRefusesNegativeMigrateWait(t *testing.T) {
	_, err := Load([]string{"-postgres-migrate-wait", "-1s"}, env(demoEnv(nil)), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "postgres-migrate-wait") {
		t.Errorf("Load -postgres-migrate-wait -1s = %v, want it named", err)
	}
}

// A server with no partners answers nobody: it says what to give it, in
// one line.
func TestLoadNeedsPartners(t *testing.T) {
	_, err := Load(nil, env(nil), io.Discard)
	if err == nil || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "-partners") || !strings.Contains(err.Error(), "-demo") {
		t.Errorf("Load without partners = %v, want one line naming -partners and -demo", err)
	}
	for _, e := range []map[string]string{{"ADLINK_DEMO": "1"}, {"ADLINK_PARTNERS": "p.json"}} {
		if _, err := Load(nil, env(e), io.Discard); err != nil {
			t.Errorf("Load with %v: %v", e, err)
		}
	}
}

// -version is read whatever else is wrong, so that it always answers.
func TestLoadVersion(t *testing.T) {
	c, err := Load([]string{"-rate-key", "x", "-version"}, env(nil), io.Discard)
	if !c.PrintVersion || err == nil {
		t.Errorf("Load = %v, %v; want PrintVersion and the problems", c.PrintVersion, err)
	}
}

func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.Catalogs = []string{file, filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.csv")}
	c.PartnersFile = filepath.Join(dir, "partners.json")
	c.DataDir = filepath.Join(file, "data")
	err := c.Prepare()
	if err == nil {
		t.Fatal("Prepare found nothing wrong")
	}
	for _, want := range []string{"a.jsonl", "b.csv", "partners.json", "data directory"} {
		if n := strings.Count(err.Error(), want); n != 1 {
			t.Errorf("error mentions %s %d times, want once:\n%v", want, n, err)
		}
	}

	c = Default()
	c.Catalogs, c.PartnersFile, c.DataDir = []string{file}, file, filepath.Join(dir, "state", "adlink")
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(c.DataDir); err != nil || !fi.IsDir() {
		t.Errorf("the data directory is not made: %v", err)
	}
}

// -h shows no secret that the environment holds.
func TestUsageHidesClickKeys(t *testing.T) {
	var out strings.Builder
	secret := strings.Repeat("S", 43)
	_, err := Load([]string{"-h"}, env(map[string]string{"ADLINK_CLICK_KEYS": "k:" + secret,
		"ADLINK_REDIS_URL": "redis://:" + secret + "@cache:6379/0"}), &out)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-click-keys") || !strings.Contains(out.String(), "-redis") ||
		strings.Contains(out.String(), secret) {
		t.Errorf("%v\n%s", err, out.String())
	}
}

// -h shows no password of the environment's Postgres URL, and a value
// that is no connection string is refused.
func TestPostgresURL(t *testing.T) {
	var out strings.Builder
	_, err := Load([]string{"-h"}, env(map[string]string{"ADLINK_POSTGRES_URL": "postgres://u:s3cret@db/x"}), &out)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-postgres") || strings.Contains(out.String(), "s3cret") {
		t.Errorf("%v\n%s", err, out.String())
	}
	if _, err := Load([]string{"-demo", "-postgres", "db.internal"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "postgres") {
		t.Errorf("-postgres db.internal: %v, want a problem", err)
	}
}

func TestTrusted(t *testing.T) {
	c := Default()
	for addr, want := range map[string]bool{"127.0.0.1": true, "::1": true, "::ffff:127.0.0.1": true, "10.1.2.3": false, "127.0.0.2": false} {
		if got := c.Trusted(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Trusted(%s) = %v, want %v", addr, got, want)
		}
	}
}

// A listener asked for any free port (port 0) gives the links the port it
// got; a fixed port, or a redirect URL given explicitly, is kept.
func TestListening(t *testing.T) {
	for _, tt := range []struct {
		name                   string
		args                   []string
		bound                  string
		wantAddr, wantRedirect string
	}{
		{"loopback, any port", []string{"-addr", "127.0.0.1:0"}, "127.0.0.1:41234", "127.0.0.1:41234", "http://127.0.0.1:41234"},
		{"wildcard, any port", []string{"-addr", ":0"}, "[::]:41234", ":41234", "http://localhost:41234"},
		{"IPv6 wildcard, any port", []string{"-addr", "[::]:0"}, "[::]:41234", "[::]:41234", "http://localhost:41234"},
		{"IPv6 loopback, any port", []string{"-addr", "[::1]:0"}, "[::1]:41234", "[::1]:41234", "http://[::1]:41234"},
		{"fixed port", []string{"-addr", "127.0.0.1:8081"}, "127.0.0.1:8081", "127.0.0.1:8081", "http://127.0.0.1:8081"},
		{"explicit redirect URL", []string{"-addr", "127.0.0.1:0", "-redirect-url", "https://r.example.com"}, "127.0.0.1:41234", "127.0.0.1:41234", "https://r.example.com"},
	} {
		c, err := Load(tt.args, env(demoEnv(nil)), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		c.Listening(tt.bound)
		if c.Addr != tt.wantAddr || c.RedirectURL != tt.wantRedirect {
			t.Errorf("%s: Addr %q RedirectURL %q, want %q %q", tt.name, c.Addr, c.RedirectURL, tt.wantAddr, tt.wantRedirect)
		}
	}
}

// With Postgres, a retention shorter than the spool's ship horizon would
// export days that clicks shipped in time still land in.
func TestLoadRefusesARetentionShorterThanShipping(t *testing.T) {
	pg := []string{"-postgres", "postgres://adlink@db.example/adlink"}
	_, err := Load(append(pg, "-retention", "24h"), env(demoEnv(nil)), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "retention 24h0m0s: with -postgres want 0 or at least 48h") {
		t.Errorf("Load of a day's retention with Postgres = %v, want it refused", err)
	}
	for _, args := range [][]string{append(pg, "-retention", "48h"), append(pg, "-retention", "0"), {"-retention", "24h"}} {
		if _, err := Load(args, env(demoEnv(nil)), io.Discard); err != nil {
			t.Errorf("Load %q = %v", args, err)
		}
	}
}

// TestCatalogCredentialsNotShown: a feed URL mistyped so that it is taken
// for a file (an upper-case scheme), or with a bad option, is reported
// without its credentials, at start-up as on a reload.
func TestCatalogCredentialsNotShown(t *testing.T) {
	const secret = "S3CR3T-7f1d"
	c := Default()
	c.Catalogs = []string{"HTTPS://u:" + secret + "@shop.example/feed.xml?token=" + secret,
		"https://u:" + secret + "@shop.example/feed.xml?token=" + secret + "#colour=red"}
	for _, err := range []error{c.Prepare(), c.Validate()} {
		if err == nil || !strings.Contains(err.Error(), "shop.example/feed.xml?token=…") || strings.Contains(err.Error(), secret) {
			t.Errorf("%v: want the feeds named without %s", err, secret)
		}
	}
}

// TestMisreadPasswordRefused: a password with an unencoded '/', '?' or
// '#' would make part of it the feed's host, shown in every error of a
// fetch to that host; such a feed is refused at start with a message
// that says how to spell it, and names neither the user nor the password.
func TestMisreadPasswordRefused(t *testing.T) {
	const user, secret = "feeduser", "S3CR3T"
	for _, cut := range []string{"/", "?", "#"} {
		c := Default()
		c.Catalogs = []string{"https://" + user + ":1234" + cut + secret + "@shop.example/feed.xml"}
		err := c.Prepare()
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), "percent-encode") ||
			strings.Contains(err.Error(), user) || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "1234") {
			t.Errorf("password with %q: %v", cut, err)
		}
	}
	// A '/' in the user name cuts it short too: the password would be the
	// path's.
	c := Default()
	c.Catalogs = []string{"https://tenant/" + user + ":" + secret + "@shop.example/feed.xml"}
	err := c.Prepare()
	if err == nil {
		err = c.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "percent-encode") || strings.Contains(err.Error(), secret) {
		t.Errorf("user name with '/': %v", err)
	}
	for _, ok := range []string{
		"https://" + user + ":1234%2F" + secret + "@shop.example/feed.xml",
		"https://tenant%2F" + user + ":" + secret + "@shop.example/feed.xml",
		"http://[::1]:8080/@shop/feed.xml",
		"https://shop.example/feed.xml?since=00:00&mail=feeds@shop.example",
	} {
		c := Default()
		c.Catalogs = []string{ok}
		if err := c.Prepare(); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestUsageHidesCatalogCredentials: -h shows the environment's feeds as
// their default, without a URL's credentials.
func TestUsageHidesCatalogCredentials(t *testing.T) {
	var out strings.Builder
	const secret = "S3CR3T-7f1d"
	_, err := Load([]string{"-h"}, env(map[string]string{
		"ADLINK_CATALOG": "https://u:" + secret + "@shop.example/feed.xml?token=" + secret}), &out)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "shop.example/feed.xml?token=…") || strings.Contains(out.String(), secret) {
		t.Errorf("%v\n%s", err, out.String())
	}
}
