package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
)

// runReport is "adlink report": the report GET /v2/report gives, printed
// from a data directory no server is running on, or from the Postgres
// database the servers share, for the operator: of everyone, or of one
// partner or advertiser.
func runReport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("adlink report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data, pgURL := stateFlags(fs, getenv, "state `directory` holding adlink.db (ADLINK_DATA_DIR)",
		"read the Postgres `URL` the servers keep reports in, not -data (ADLINK_POSTGRES_URL)")
	from := fs.String("from", "", "first `day`, YYYY-MM-DD, of -tz; default 29 days before -to")
	to := fs.String("to", "", "last `day`, included, of -tz; default today")
	tz := fs.String("tz", "UTC", "IANA time `zone` whose days -from, -to and the day and hour groups are, e.g. Europe/Berlin")
	groupBy := fs.String("group-by", "day", "comma-separated `groups`: day, hour, site_id, ad, advertiser, criterion, yk_tag, context, country")
	format := fs.String("format", "csv", "csv or json")
	partner := fs.String("partner", "", "only this partner's sites (`api_key`)")
	advertiser := fs.String("advertiser", "", "only this advertiser's ads (`id`)")
	timeout := pgTimeoutFlag(fs, 10*time.Minute, "the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("report: unexpected argument %q", fs.Arg(0))
	}
	if *timeout <= 0 {
		return fmt.Errorf("report: -timeout %v: want a time above 0", *timeout)
	}
	acc := accounts.Account{Kind: accounts.Operator}
	switch {
	case *partner != "" && *advertiser != "":
		return errors.New("report: give -partner or -advertiser, not both")
	case *partner != "":
		acc = accounts.Account{Kind: accounts.Partner, ID: *partner}
	case *advertiser != "":
		// As the advertisers file is read: the catalog's ids are lower case.
		acc = accounts.Account{Kind: accounts.Advertiser, ID: strings.ToLower(*advertiser)}
	}
	params := map[string]string{"from": *from, "to": *to, "tz": *tz, "group_by": *groupBy, "format": *format}
	req, problems := report.Parse(func(k string) string { return params[k] }, time.Now())
	if len(problems) > 0 {
		var errs []error
		for _, p := range problems {
			flagName := map[string]string{"from": "from", "to": "to", "tz": "tz", "group_by": "group-by", "format": "format"}[p.Param]
			errs = append(errs, fmt.Errorf("report: -%s: %s", flagName, p.Message))
		}
		return errors.Join(errs...)
	}
	var rollups clicks.RollupReader
	if *pgURL != "" {
		var cancel context.CancelFunc
		ctx, cancel = withPGTimeout(ctx, *timeout, "the report")
		defer cancel()
		db, err := openPG(ctx, *pgURL, pgstore.OpenReader)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		defer db.Close()
		rollups = db.Rollups()
	} else {
		db, err := store.OpenReadOnly(*data)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		defer db.Close()
		if err := keptInPostgres(db, "report", "read"); err != nil {
			return err
		}
		rollups = clicks.ReadRollups(db)
	}
	rows, err := report.Run(ctx, rollups, acc, req)
	if err != nil {
		return fmt.Errorf("report: %w", timedOut(ctx, err))
	}
	if len(rows) == 0 && acc.Kind != accounts.Operator {
		// An api_key or id spelt wrong looks like a quiet range: say which.
		fmt.Fprintf(stderr, "report: no clicks or impressions of %s %q from %s to %s: check the %s\n", acc.Kind, acc.ID,
			req.From.Format(time.DateOnly), req.To.Format(time.DateOnly), map[accounts.Kind]string{accounts.Partner: "api_key", accounts.Advertiser: "advertiser id"}[acc.Kind])
	}
	if req.Format == "csv" {
		return report.WriteCSV(stdout, req, rows)
	}
	_, err = stdout.Write(append(report.AppendJSON(nil, acc, req, rows), '\n'))
	return err
}

// stateFlags adds -data and -postgres to fs, from ADLINK_DATA_DIR
// (default .data) and ADLINK_POSTGRES_URL, for a command on the servers'
// state, with these usages.
func stateFlags(fs *flag.FlagSet, getenv func(string) string, dataUsage, pgUsage string) (data, pgURL *string) {
	data, pgURL = new(string), new(string)
	if *data = getenv("ADLINK_DATA_DIR"); *data == "" {
		*data = ".data"
	}
	fs.StringVar(data, "data", *data, dataUsage)
	*pgURL = getenv("ADLINK_POSTGRES_URL")
	fs.Func("postgres", pgUsage, func(s string) error { *pgURL = s; return nil })
	return data, pgURL
}

// pgTimeoutFlag adds -timeout to fs, the bound of a command's work in
// Postgres, whose default is def.
func pgTimeoutFlag(fs *flag.FlagSet, def time.Duration, what string) *time.Duration {
	return fs.Duration("timeout", def, fmt.Sprintf("with -postgres, longest `time` %s takes, reaching Postgres included (at most %v of it)", what, pgConnectWithin))
}

// pgConnectWithin bounds a command's reaching Postgres and reading its
// schema's version, within its -timeout: a host that takes the
// connection and never answers (a Postgres stopped, a wrong port behind
// a firewall) fails it, naming what did not answer. A var so that tests
// can shorten it.
var pgConnectWithin = 30 * time.Second

// withPGTimeout returns ctx bounded by timeout, the command's -timeout,
// whose end is an error naming what did not end (the credit, the report)
// and the flag: Postgres may have answered all along, its work taking
// longer.
func withPGTimeout(ctx context.Context, timeout time.Duration, what string) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, timeout,
		fmt.Errorf("%s did not end within -timeout %v: Postgres was slow or did not answer (a larger -timeout waits longer)", what, timeout))
}

// openPG opens the database at url with open, which must reach it within
// pgConnectWithin and ctx: an error says which ended.
func openPG(ctx context.Context, url string, open func(context.Context, string) (*pgstore.DB, error)) (*pgstore.DB, error) {
	octx, cancel := context.WithTimeoutCause(ctx, pgConnectWithin,
		fmt.Errorf("connecting: Postgres did not answer within %v", pgConnectWithin))
	defer cancel()
	db, err := open(octx, url)
	if err != nil && octx.Err() != nil {
		return nil, context.Cause(octx)
	}
	return db, err
}

// timedOut returns the cause of ctx's end in place of err, which it
// caused.
func timedOut(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// keptInPostgres is the error of command on db, the state file of a
// server whose clicks are in Postgres, where the operator is to verb them.
func keptInPostgres(db *bolt.DB, command, verb string) error {
	if !clicks.KeptInPostgres(db) {
		return nil
	}
	return fmt.Errorf("%s: %s is the state file of a server that kept its clicks in Postgres: %s them there, with -postgres URL (ADLINK_POSTGRES_URL)", command, db.Path(), verb)
}
