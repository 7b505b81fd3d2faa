package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/internal/testpg"
)

// TestReportCommand: "adlink report" prints from the data directory what
// GET /v2/report answered the partner while the server ran, and refuses
// to read a directory a running server holds.
func TestReportCommand(t *testing.T) {
	data := t.TempDir()
	base, stop := startRun(t, "-data", data, "-demo")
	for _, tag := range []string{"a", "b", "c"} {
		u := firstAd(t, base, "q=lg+handy&loc=de&api_key=demo&site_id=demo&yk_tag="+tag)
		clickAs(t, base+u[strings.Index(u, "/v1/redirect"):])
	}
	today := time.Now().UTC().Format(time.DateOnly)
	query := "from=" + today + "&to=" + today + "&group_by=ad,yk_tag&format=json"
	req, _ := http.NewRequest(http.MethodGet, base+"/v2/report?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || strings.Count(string(served), `"yk_tag":`) != 3 {
		t.Fatalf("GET /v2/report: %d %s", res.StatusCode, served)
	}
	args := []string{"report", "-data", data, "-from", today, "-to", today, "-group-by", "ad,yk_tag", "-format", "json", "-partner", "demo"}
	if err := run(context.Background(), args, noEnv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "in use by a running server") {
		t.Errorf("report beside a running server: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), args, noEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var a, b struct{ Rows []map[string]any }
	json.Unmarshal(served, &a)
	json.Unmarshal(out.Bytes(), &b)
	if len(a.Rows) != 3 || len(b.Rows) != 3 {
		t.Fatalf("served %s\nprinted %s", served, out.Bytes())
	}
	for i := range a.Rows {
		for k, v := range a.Rows[i] {
			if b.Rows[i][k] != v {
				t.Errorf("row %d %s: printed %v, served %v", i, k, b.Rows[i][k], v)
			}
		}
	}
	// The advertiser as the advertisers file may spell it: its ids are
	// read in any case, the catalog's are lower case.
	out.Reset()
	if err := run(context.Background(), []string{"report", "-data", data, "-from", today, "-to", today, "-advertiser", "Handy-Bestkauf.DE"},
		noEnv, &out, io.Discard); err != nil || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("report -advertiser Handy-Bestkauf.DE = %v, printed\n%s\nwant the header and today's row", err, out.String())
	}
	// A partner with nothing in the range: the report is empty, and the
	// command says whose, as an api_key spelt wrong gets it too.
	out.Reset()
	var said bytes.Buffer
	if err := run(context.Background(), []string{"report", "-data", data, "-from", today, "-to", today, "-partner", "dem0"},
		noEnv, &out, &said); err != nil || strings.Count(out.String(), "\n") != 1 || !strings.Contains(said.String(), `no clicks or impressions of partner "dem0"`) {
		t.Errorf("report -partner dem0 = %v, printed\n%s\nsaid %q", err, out.String(), said.String())
	}
	for _, bad := range [][]string{{"report", "-data", data, "-group-by", "nope"}, {"report", "-data", data, "-from", "yesterday"},
		{"report", "-data", t.TempDir()}, {"report", "-data", data, "-partner", "a", "-advertiser", "b"}} {
		if err := run(context.Background(), bad, noEnv, io.Discard, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestReportCommandReadsPostgres: with -postgres, "adlink report" prints
// what the servers recorded in Postgres, while one still runs.
func TestReportCommandReadsPostgres(t *testing.T) {
	url := testpg.New(t)
	base, stop := startRun(t, "-data", t.TempDir(), "-demo", "-postgres", url)
	defer stop()
	for _, tag := range []string{"a", "b"} {
		u := firstAd(t, base, "q=lg+handy&loc=de&api_key=demo&site_id=demo&yk_tag="+tag)
		clickAs(t, base+u[strings.Index(u, "/v1/redirect"):])
	}
	today := time.Now().UTC().Format(time.DateOnly)
	var out bytes.Buffer
	env := func(k string) string {
		if k == "ADLINK_POSTGRES_URL" {
			return url
		}
		return ""
	}
	if err := run(context.Background(), []string{"report", "-from", today, "-to", today, "-group-by", "yk_tag", "-format", "json"},
		env, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rep struct{ Rows []struct{ Clicks int } }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Rows) != 2 || rep.Rows[0].Clicks != 1 || rep.Rows[1].Clicks != 1 {
		t.Errorf("report from Postgres: %v %s", err, out.Bytes())
	}
}

// TestReportCommandLeavesPostgresAlone: "adlink report -postgres" reads;
// it migrates no schema. A database the servers never used (the wrong
// URL) is refused as such, and left as it was.
func TestReportCommandLeavesPostgresAlone(t *testing.T) {
	url := testpg.New(t)
	var out bytes.Buffer
	err := run(context.Background(), []string{"report", "-postgres", url}, noEnv, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no adlink schema") {
		t.Errorf("report of an empty database = %v, printed %q; want an error saying it holds no adlink schema", err, out.String())
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var tables int
	if err := conn.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("report created %d tables in the database it read", tables)
	}
}

// TestReportCommandNamesPostgresForAReplicasData: the data directory of a
// server that kept its clicks in Postgres holds no report; "adlink
// report" on it says where the report is, not an empty one.
func TestReportCommandNamesPostgresForAReplicasData(t *testing.T) {
	url := testpg.New(t)
	data := t.TempDir()
	base, stop := startRun(t, "-data", data, "-demo", "-postgres", url)
	u := firstAd(t, base, "q=lg+handy&loc=de&api_key=demo&site_id=demo")
	clickAs(t, base+u[strings.Index(u, "/v1/redirect"):])
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"report", "-data", data}, noEnv, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-postgres") {
		t.Errorf("report -data of a replica of Postgres = %v, printed %q; want an error naming -postgres", err, out.String())
	}
}
