package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
)

// runReviewSites is "adlink review-sites": the sites GET
// /admin/sites/review ranks, whose billable click-through rate (-rank
// ctr) or share of clicks refused as a script's (-rank refused) is
// furthest above the median site's, from a data directory no server is
// running on or from the Postgres database the servers share, each with
// the flags of adlink invalidate that select its clicks. As on a server,
// one review runs at a time on a data directory or a database: another
// started meanwhile is refused at once (errReviewBusy).
func runReviewSites(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("adlink review-sites", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data, pgURL := stateFlags(fs, getenv, "state `directory` holding adlink.db (ADLINK_DATA_DIR)",
		"read the Postgres `URL` the servers keep reports in, not -data (ADLINK_POSTGRES_URL)")
	from := fs.String("from", "", "start, a UTC `day` (YYYY-MM-DD) or an RFC 3339 time on a whole hour; default 7 days before -to")
	to := fs.String("to", "", "end, a UTC `day`, included, or an RFC 3339 time on a whole hour, excluded; default the end of today")
	fs.String("rank", report.RankCTR, "rank the sites by billable CTR (ctr) or by the share of their clicks refused as a script's (refused)")
	fs.Int64("min-impressions", report.ReviewMinImpressions, "fewest impressions a site needs in the range to be reviewed, with -rank ctr")
	fs.Int64("min-clicks", report.ReviewMinClicks, "fewest clicks, of pages and search answers, a site needs in the range to be reviewed, with -rank refused")
	fs.Int("limit", report.ReviewLimit, fmt.Sprintf("most sites listed, 1 to %d", report.MaxReviewLimit))
	format := fs.String("format", "table", "table or json")
	timeout := pgTimeoutFlag(fs, 10*time.Minute, "the review")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("review-sites: unexpected argument %q", fs.Arg(0))
	}
	if *timeout <= 0 {
		return fmt.Errorf("review-sites: -timeout %v: want a time above 0", *timeout)
	}
	// The flags given are the route's parameters, so that a bound of the
	// other rank is refused as the route refuses it.
	params := map[string]string{"from": *from, "to": *to}
	fs.Visit(func(f *flag.Flag) { params[strings.ReplaceAll(f.Name, "-", "_")] = f.Value.String() })
	req, problems := report.ParseSites(func(k string) string { return params[k] }, time.Now())
	if *format != "table" && *format != "json" {
		problems = append(problems, report.Problem{Param: "format", Message: "format must be table or json, not " + strconv.Quote(*format)})
	}
	if len(problems) > 0 {
		var errs []error
		for _, p := range problems {
			flagName := strings.ReplaceAll(p.Param, "_", "-")
			errs = append(errs, fmt.Errorf("review-sites: -%s: %s", flagName, p.Message))
		}
		return errors.Join(errs...)
	}
	var rollups clicks.RollupReader
	if *pgURL != "" {
		var cancel context.CancelFunc
		ctx, cancel = withPGTimeout(ctx, *timeout, "the review")
		defer cancel()
		db, err := openPG(ctx, *pgURL, pgstore.OpenReader)
		if err != nil {
			return fmt.Errorf("review-sites: %w", err)
		}
		defer db.Close()
		release, ok, err := db.TryReviewTurn(ctx)
		if err != nil {
			return fmt.Errorf("review-sites: %w", timedOut(ctx, err))
		}
		if !ok {
			return errReviewBusy("this Postgres database")
		}
		defer release()
		rollups = db.Rollups()
	} else {
		db, err := store.OpenReadOnly(*data)
		if err != nil {
			return fmt.Errorf("review-sites: %w", err)
		}
		defer db.Close()
		if err := keptInPostgres(db, "review-sites", "review"); err != nil {
			return err
		}
		release, ok, err := lockReviewDir(*data)
		if err != nil {
			return fmt.Errorf("review-sites: %w", err)
		}
		if !ok {
			return errReviewBusy(*data)
		}
		defer release()
		rollups = clicks.ReadRollups(db)
	}
	review, err := report.Sites(ctx, rollups, req)
	if err != nil {
		return fmt.Errorf("review-sites: %w", timedOut(ctx, err))
	}
	if *format == "json" {
		_, err = stdout.Write(append(review.JSON(), '\n'))
		return err
	}
	return review.WriteTable(stdout)
}

// errReviewBusy is the error of adlink review-sites started while another
// reads where: a data directory, or a Postgres database.
func errReviewBusy(where string) error {
	return fmt.Errorf("review-sites: another adlink review-sites is reading %s, and one runs at a time: run it again once that one has ended", where)
}
