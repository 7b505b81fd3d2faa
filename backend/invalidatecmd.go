package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/app"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
)

// runInvalidate is "adlink invalidate": the operator's credit of billed
// clicks found invalid later, as POST /admin/invalidate gives it, in the
// data directory of a stopped server (the file's lock refuses a running
// one) or in the Postgres database the servers share, while they run. It
// prints the answer POST /admin/invalidate gives and logs one line.
func runInvalidate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("adlink invalidate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data, pgURL := stateFlags(fs, getenv, "state `directory` holding adlink.db, of a stopped server (ADLINK_DATA_DIR)",
		"credit in the Postgres `URL` the servers keep clicks in, not -data (ADLINK_POSTGRES_URL)")
	advertisers := fs.String("advertisers", getenv("ADLINK_ADVERTISERS"),
		"advertisers JSON `file` whose time zones name each budget's day (ADLINK_ADVERTISERS); without it, UTC days")
	params := map[string]*string{
		"api_key": fs.String("api-key", "", "only this partner's clicks (`api_key`)"),
		"site_id": fs.String("site-id", "", "only this site's clicks (`site_id`; needs -api-key)"),
		"ad":      fs.String("ad", "", "only the clicks on this ad (`id`)"),
		"id":      new(string),
		"from":    fs.String("from", "", "first click `time`: RFC 3339, or a UTC day YYYY-MM-DD from its start (required)"),
		"to":      fs.String("to", "", "end `time`: RFC 3339, excluded, or a UTC day YYYY-MM-DD, included (required)"),
		"reason":  fs.String("reason", "", "why the clicks are invalid, kept in the log (`text`, at most 200 characters; required)"),
	}
	// -id may be given again, each adding its ids, as POST /admin/invalidate's id.
	fs.Func("id", "only these clicks (comma-separated click `ids`; -id again adds more)", func(s string) error {
		if *params["id"] != "" {
			*params["id"] += ","
		}
		*params["id"] += s
		return nil
	})
	dryRun := fs.Bool("dry-run", false, "count and sum the clicks it would credit, changing nothing")
	timeout := pgTimeoutFlag(fs, 10*time.Minute, "the credit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("invalidate: unexpected argument %q", fs.Arg(0))
	}
	if *timeout <= 0 {
		return fmt.Errorf("invalidate: -timeout %v: want a time above 0", *timeout)
	}
	flagOf := map[string]string{"api_key": "api-key", "site_id": "site-id", "ad": "ad", "id": "id", "from": "from",
		"to": "to", "reason": "reason", "dry_run": "dry-run"}
	inv, err := clicks.ParseInvalidation(func(k string) string {
		if k == "dry_run" {
			return fmt.Sprint(*dryRun)
		}
		return *params[k]
	})
	if err == nil {
		err = inv.Check()
	}
	if ie := (*clicks.InvalidationError)(nil); errors.As(err, &ie) {
		return fmt.Errorf("invalidate: -%s: %s", flagOf[ie.Param], ie.Message)
	}
	var book *accounts.Book
	if *advertisers != "" {
		ads, err := accounts.LoadAdvertisers(*advertisers)
		if err == nil {
			book, err = accounts.New(nil, ads)
		}
		if err != nil {
			return fmt.Errorf("invalidate: -advertisers: %w", err)
		}
	}
	var v clicks.Invalidator
	if *pgURL != "" {
		var cancel context.CancelFunc
		ctx, cancel = withPGTimeout(ctx, *timeout, "the credit")
		defer cancel()
		// The servers migrate the schema, not a tool run beside them.
		db, err := openPG(ctx, *pgURL, pgstore.OpenMigrated)
		if err != nil {
			return fmt.Errorf("invalidate: %w", err)
		}
		defer db.Close()
		v = db.Invalidator()
	} else {
		// The file must be there: Open would make an empty one.
		if _, err := os.Stat(filepath.Join(*data, store.FileName)); err != nil {
			return fmt.Errorf("invalidate: %w", err)
		}
		db, err := store.Open(*data)
		if err != nil {
			if strings.Contains(err.Error(), "in use") {
				return fmt.Errorf("invalidate: %s is in use by a running server: stop it, or ask it (POST /admin/invalidate on its admin listener)", filepath.Join(*data, store.FileName))
			}
			return fmt.Errorf("invalidate: %w", err)
		}
		defer db.Close()
		if err := keptInPostgres(db, "invalidate", "credit"); err != nil {
			return err
		}
		bolt, err := clicks.NewInvalidator(db)
		if err != nil {
			return fmt.Errorf("invalidate: %w", err)
		}
		v = bolt
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	credit, err := app.Invalidate(v, func() *accounts.Book { return book }, nil, log)(ctx, inv)
	if ie := (*clicks.InvalidationError)(nil); errors.As(err, &ie) {
		return fmt.Errorf("invalidate: -%s: %s", flagOf[ie.Param], ie.Message)
	}
	if err != nil {
		return fmt.Errorf("invalidate: %w; the batches credited before (%d clicks) stay credited, and running it again credits the rest", timedOut(ctx, err), credit.Clicks)
	}
	if credit.Micros == nil {
		credit.Micros = map[string]int64{}
	}
	b, _ := json.Marshal(api.Invalidated{DryRun: inv.DryRun, Clicks: credit.Clicks, Micros: credit.Micros})
	_, err = stdout.Write(append(b, '\n'))
	return err
}
