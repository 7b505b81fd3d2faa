package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/adlink/adlink/backend/clicks"
)

// A site review ranks the partners' sites by how far their billable
// click-through rate, or the share of their clicks refused as a script's,
// is above the median site's, for the operator to look at the worst: a
// publisher's script can make clicks bill that no reader meant, and only
// the operator sees every site's figures. It reads the rollups reports
// read.

// The site review's defaults and bounds.
const (
	// ReviewDays is the range a review covers when it names none: the
	// last 7 UTC days, today included.
	ReviewDays = 7
	// MaxReviewDays is the longest range one review covers.
	MaxReviewDays = 92
	// ReviewMinImpressions is the fewest impressions a site needs in the
	// range to be reviewed by default: below it a few clicks make a rate.
	ReviewMinImpressions = 1000
	// ReviewMinClicks is the fewest clicks, of its pages and search
	// answers together, a site needs in the range to be ranked by its
	// refused share by default: below it a few clicks make a share.
	ReviewMinClicks = 100
	// ReviewLimit and MaxReviewLimit are the default and largest number
	// of sites a review lists.
	ReviewLimit    = 50
	MaxReviewLimit = 1000
)

// How a review ranks the sites: by billable click-through rate (RankCTR,
// the default) or by the share of their clicks refused as a script's
// (RankRefused), which needs no impressions: an answer's signed links
// bill without one.
const (
	RankCTR     = "ctr"
	RankRefused = "refused"
)

// RefusedReasons are the reasons a click is refused as scripted or
// repeated, that a RankRefused review counts: a script's clicks give
// them more often than a reader's.
var RefusedReasons = []string{clicks.ReasonNotNavigation, clicks.ReasonTooFast, clicks.ReasonNoIntent, clicks.ReasonRepeat,
	clicks.ReasonNetworkCap, clicks.ReasonPrefixCap, clicks.ReasonPrefixAdCap}

// Search is the context of a search answer's ads, whose clicks have no
// impressions.
const Search = clicks.SearchContext

// SitesRequest is a site review's range and bounds.
type SitesRequest struct {
	// From and To bound the clicks and impressions counted, From <= t <
	// To, whole UTC hours: the rollups keep hours.
	From, To time.Time
	// Rank is RankCTR ("" is taken for it) or RankRefused.
	Rank string
	// MinImpressions is the fewest impressions a site needs in the range
	// under RankCTR.
	MinImpressions int64
	// MinClicks is the fewest clicks, of pages and search answers, a site
	// needs in the range under RankRefused.
	MinClicks int64
	// Limit is the most sites listed.
	Limit int
}

// ParseSites reads a site review's parameters at now: from and to as an
// invalidation reads them (RFC 3339, or UTC days, to included), by
// default the last ReviewDays days; rank (ctr, the default, or refused),
// min_impressions (rank ctr's), min_clicks (rank refused's) and limit.
// Every problem names its parameter; the bound of the other rank is one.
func ParseSites(get func(string) string, now time.Time) (SitesRequest, []Problem) {
	req := SitesRequest{Rank: RankCTR, MinImpressions: ReviewMinImpressions, MinClicks: ReviewMinClicks, Limit: ReviewLimit}
	var problems []Problem
	bound := func(name string, end bool) time.Time {
		v := get(name)
		t, err := clicks.ParseBound(v, end)
		switch {
		case err != nil:
			problems = append(problems, Problem{name, name + ": " + err.Error()})
		case !t.IsZero() && !t.Truncate(time.Hour).Equal(t):
			problems = append(problems, Problem{name, name + " must be a whole hour of UTC (the counts are kept by the hour), not " + strconv.Quote(v)})
			return time.Time{}
		}
		return t
	}
	req.From, req.To = bound("from", false), bound("to", true)
	if len(problems) == 0 {
		switch {
		case req.To.IsZero() && req.From.IsZero():
			req.To = now.UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
			req.From = req.To.AddDate(0, 0, -ReviewDays)
		case req.To.IsZero():
			req.To = req.From.AddDate(0, 0, ReviewDays)
		case req.From.IsZero():
			req.From = req.To.AddDate(0, 0, -ReviewDays)
		}
		switch {
		case !req.From.Before(req.To):
			problems = append(problems, Problem{"to", "to must be after from"})
		case req.To.Sub(req.From) > MaxReviewDays*24*time.Hour:
			problems = append(problems, Problem{"from", "a site review covers at most " + strconv.Itoa(MaxReviewDays) + " days, not " +
				strconv.FormatFloat(req.To.Sub(req.From).Hours()/24, 'f', -1, 64)})
		}
	}
	rank := get("rank")
	switch rank {
	case "", RankCTR:
		rank = RankCTR
	case RankRefused:
	default:
		problems = append(problems, Problem{"rank", "rank must be ctr or refused, not " + strconv.Quote(rank)})
	}
	req.Rank = rank
	for _, b := range []struct {
		name, rank string
		n          *int64
	}{{"min_impressions", RankCTR, &req.MinImpressions}, {"min_clicks", RankRefused, &req.MinClicks}} {
		v := get(b.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || n < 0:
			problems = append(problems, Problem{b.name, b.name + " must be a whole number, 0 or more, not " + strconv.Quote(v)})
		case rank != b.rank && (rank == RankCTR || rank == RankRefused):
			problems = append(problems, Problem{b.name, b.name + " bounds the sites of rank=" + b.rank + ", not of rank=" + rank})
		}
		*b.n = n
	}
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxReviewLimit {
			problems = append(problems, Problem{"limit", "limit must be a whole number from 1 to " + strconv.Itoa(MaxReviewLimit) + ", not " + strconv.Quote(v)})
		}
		req.Limit = n
	}
	return req, problems
}

// SiteReview is a site review's answer.
type SiteReview struct {
	From, To time.Time
	// Rank, MinImpressions and MinClicks are the request's.
	Rank                      string
	MinImpressions, MinClicks int64
	// Reviewed is the number of sites with MinImpressions (RankCTR) or
	// MinClicks (RankRefused) in the range, of which Sites lists the
	// first Limit.
	Reviewed int
	// Median is the median of the reviewed sites' billable click-through
	// rates (RankCTR) or refused shares (RankRefused); of two middle
	// ones, their mean.
	Median float64
	Sites  []SiteRow
}

// SiteRow is one partner's site in a review: the counts over the range of
// the ads its pages showed (context intext, in every currency), and its
// rates. A search answer's ads have no impressions: their clicks are
// counted apart, out of the rate, and in the refused share.
type SiteRow struct {
	APIKey, SiteID string
	clicks.Measures
	// Search are the site's clicks on ads of search answers: those
	// billed, and those not by reason.
	Search clicks.Measures
	// Spend is the billable clicks' bids by currency, in millionths,
	// search answers' included.
	Spend map[string]int64
	// CTR is billable clicks per impression, 0 without impressions.
	CTR float64
	// Refused is the number of the site's clicks, of its pages and
	// search answers, not billed for one of RefusedReasons; RefusedShare
	// is it over those clicks, 0 without clicks.
	Refused      int64
	RefusedShare float64
	// OverMedian is CTR (RankCTR) or RefusedShare (RankRefused) over the
	// review's Median; 0 when that is 0 (the JSON and the table give
	// none then).
	OverMedian float64
}

// UnbilledFor is the number of the site's clicks that did not bill for
// reason, one of clicks.Reasons.
func (s *SiteRow) UnbilledFor(reason string) int64 {
	if i := slices.Index(clicks.Reasons, reason); i >= 0 {
		return s.Measures.Unbilled[i]
	}
	return 0
}

// SearchUnbilledFor is the number of the site's clicks on search
// answers' ads that did not bill for reason.
func (s *SiteRow) SearchUnbilledFor(reason string) int64 {
	if i := slices.Index(clicks.Reasons, reason); i >= 0 {
		return s.Search.Unbilled[i]
	}
	return 0
}

// AllClicks is the number of the site's clicks, of its pages and search
// answers.
func (s *SiteRow) AllClicks() int64 { return s.Clicks + s.Search.Clicks }

// Sites reviews the sites of req's range from rollups: every partner's
// site (an api_key and site_id both set) ranked, the first req.Limit
// listed. Under RankCTR, those with req.MinImpressions, by billable
// click-through rate; under RankRefused, those with req.MinClicks, by
// refused share; highest first, so by its ratio to the median. The store
// sums the rollups by site (clicks.RollupReader.SumSites): the daily
// ones for the range's whole UTC days, the hourly ones for its other
// hours.
func Sites(ctx context.Context, rollups clicks.RollupReader, req SitesRequest) (SiteReview, error) {
	rank := cmp.Or(req.Rank, RankCTR)
	// measure is what the rank orders by; weight breaks its ties, the
	// site of more of it first.
	var measure func(*SiteRow) float64
	var weight func(*SiteRow) int64
	switch rank {
	case RankCTR:
		measure = func(r *SiteRow) float64 { return r.CTR }
		weight = func(r *SiteRow) int64 { return r.Impressions }
	case RankRefused:
		measure = func(r *SiteRow) float64 { return r.RefusedShare }
		weight = (*SiteRow).AllClicks
	default:
		return SiteReview{}, fmt.Errorf("site review: no rank %q", req.Rank)
	}
	type site struct{ apiKey, siteID string }
	sites := map[site]*SiteRow{}
	add := func(r *clicks.Rollup) error {
		k := site{r.APIKey, r.SiteID}
		row := sites[k]
		if row == nil {
			row = &SiteRow{APIKey: r.APIKey, SiteID: r.SiteID, Spend: map[string]int64{}}
			sites[k] = row
		}
		if r.Context == Search {
			row.Search.Add(&r.Measures)
		} else {
			row.Add(&r.Measures)
		}
		if r.SpendMicros != 0 {
			row.Spend[r.Currency] += r.SpendMicros
		}
		return nil
	}
	if err := rollups.SumSites(ctx, req.From, req.To, add); err != nil {
		return SiteReview{}, err
	}
	review := SiteReview{From: req.From, To: req.To, Rank: rank, MinImpressions: req.MinImpressions, MinClicks: req.MinClicks}
	var rows []SiteRow
	for _, r := range sites {
		if r.Impressions > 0 {
			r.CTR = float64(r.Billable) / float64(r.Impressions)
		}
		for _, reason := range RefusedReasons {
			r.Refused += r.UnbilledFor(reason) + r.SearchUnbilledFor(reason)
		}
		if all := r.AllClicks(); all > 0 {
			r.RefusedShare = float64(r.Refused) / float64(all)
		}
		switch rank {
		case RankCTR:
			if r.Impressions == 0 || r.Impressions < req.MinImpressions {
				continue
			}
		case RankRefused:
			if r.AllClicks() == 0 || r.AllClicks() < req.MinClicks {
				continue
			}
		}
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b SiteRow) int {
		return cmp.Or(cmp.Compare(measure(&b), measure(&a)), cmp.Compare(weight(&b), weight(&a)),
			cmp.Compare(a.APIKey, b.APIKey), cmp.Compare(a.SiteID, b.SiteID))
	})
	review.Reviewed = len(rows)
	if n := len(rows); n > 0 {
		// rows are sorted by measure, highest first.
		review.Median = (measure(&rows[(n-1)/2]) + measure(&rows[n/2])) / 2
	}
	for i := range rows {
		if review.Median > 0 {
			rows[i].OverMedian = measure(&rows[i]) / review.Median
		}
	}
	if len(rows) > req.Limit {
		rows = rows[:req.Limit]
	}
	review.Sites = rows
	return review, nil
}

// round is f to places decimal places.
func round(f float64, places int) float64 {
	p := math.Pow10(places)
	return math.Round(f*p) / p
}

// SiteSignals are the shares of a site's clicks, of its pages and search
// answers together as RefusedShare counts them, that did not bill for
// reasons a script's clicks give more than a reader's: they add up to
// RefusedShare, each rounded.
type SiteSignals struct {
	// NotNavigation: the browser said no person clicked (a page's script
	// navigated, a hidden frame or image, a fetch).
	NotNavigation float64 `json:"not_navigation_share"`
	// Repeat: the decision was clicked before, or the network had a
	// billable click on the ad in the last 24 h.
	Repeat float64 `json:"repeat_share"`
	// Caps: the network or its prefix had its billable clicks of the day
	// (network_cap, prefix_cap, prefix_ad_cap).
	Caps float64 `json:"cap_share"`
	// TooFast: sooner after the impression than a reader clicks.
	TooFast float64 `json:"too_fast_share"`
	// NoIntent: no Fetch Metadata, nothing says a person navigated.
	NoIntent float64 `json:"no_intent_share"`
}

// Signals are r's SiteSignals.
func (r *SiteRow) Signals() SiteSignals {
	share := func(reasons ...string) float64 {
		var n int64
		for _, reason := range reasons {
			n += r.UnbilledFor(reason) + r.SearchUnbilledFor(reason)
		}
		if all := r.AllClicks(); all > 0 {
			return round(float64(n)/float64(all), 4)
		}
		return 0
	}
	return SiteSignals{
		NotNavigation: share(clicks.ReasonNotNavigation),
		Repeat:        share(clicks.ReasonRepeat),
		Caps:          share(clicks.ReasonNetworkCap, clicks.ReasonPrefixCap, clicks.ReasonPrefixAdCap),
		TooFast:       share(clicks.ReasonTooFast),
		NoIntent:      share(clicks.ReasonNoIntent),
	}
}

// Selector is what adlink invalidate (POST /admin/invalidate) takes to
// credit a reviewed site's clicks of the range.
type Selector struct {
	APIKey string `json:"api_key"`
	SiteID string `json:"site_id"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// siteJSON is a SiteRow as a review's JSON gives it. The median and the
// ratio to it are the rank's: of the billable CTR, or of the refused
// share.
type siteJSON struct {
	APIKey            string           `json:"api_key"`
	SiteID            string           `json:"site_id"`
	Impressions       int64            `json:"impressions"`
	Clicks            int64            `json:"clicks"`
	Billable          int64            `json:"billable_clicks"`
	CTR               float64          `json:"billable_ctr"`
	MedianCTR         *float64         `json:"median_billable_ctr,omitempty"`
	OverMedian        *float64         `json:"ctr_over_median,omitempty"`
	Refused           int64            `json:"refused_clicks"`
	RefusedShare      float64          `json:"refused_share"`
	MedianRefused     *float64         `json:"median_refused_share,omitempty"`
	RefusedOverMedian *float64         `json:"refused_over_median,omitempty"`
	Signals           SiteSignals      `json:"signals"`
	Unbilled          map[string]int64 `json:"unbilled"`
	SearchClicks      int64            `json:"search_clicks"`
	SearchBillable    int64            `json:"search_billable_clicks"`
	SearchUnbilled    map[string]int64 `json:"search_unbilled"`
	Spend             map[string]int64 `json:"spend_micros"`
	Invalidate        Selector         `json:"invalidate"`
}

// reviewJSON is a SiteReview as JSON: the bound and median of its rank.
type reviewJSON struct {
	From           string     `json:"from"`
	To             string     `json:"to"`
	Rank           string     `json:"rank"`
	MinImpressions *int64     `json:"min_impressions,omitempty"`
	MinClicks      *int64     `json:"min_clicks,omitempty"`
	Reviewed       int        `json:"reviewed"`
	MedianCTR      *float64   `json:"median_billable_ctr,omitempty"`
	MedianRefused  *float64   `json:"median_refused_share,omitempty"`
	Sites          []siteJSON `json:"sites"`
}

// rank is the review's rank, RankCTR when it has none.
func (v *SiteReview) rank() string { return cmp.Or(v.Rank, RankCTR) }

// Selector is the invalidation selector of row r of the review.
func (v *SiteReview) Selector(r *SiteRow) Selector {
	return Selector{APIKey: r.APIKey, SiteID: r.SiteID, From: v.From.Format(time.RFC3339), To: v.To.Format(time.RFC3339)}
}

// JSON is the review as JSON: its range, RFC 3339, its rank and bound,
// the sites reviewed, the median, and the sites listed, rates rounded (a
// rate to 6 places, a ratio to 2, a share to 4).
func (v *SiteReview) JSON() []byte {
	out := reviewJSON{From: v.From.Format(time.RFC3339), To: v.To.Format(time.RFC3339), Rank: v.rank(),
		Reviewed: v.Reviewed, Sites: make([]siteJSON, 0, len(v.Sites))}
	var median float64
	if out.Rank == RankRefused {
		median = round(v.Median, 4)
		out.MinClicks, out.MedianRefused = &v.MinClicks, &median
	} else {
		median = round(v.Median, 6)
		out.MinImpressions, out.MedianCTR = &v.MinImpressions, &median
	}
	byReason := func(counts []int64) map[string]int64 {
		m := make(map[string]int64, len(clicks.Reasons))
		for j, reason := range clicks.Reasons {
			m[reason] = counts[j]
		}
		return m
	}
	for i := range v.Sites {
		r := &v.Sites[i]
		row := siteJSON{APIKey: r.APIKey, SiteID: r.SiteID, Impressions: r.Impressions, Clicks: r.Clicks,
			Billable: r.Billable, CTR: round(r.CTR, 6), Refused: r.Refused, RefusedShare: round(r.RefusedShare, 4),
			Signals: r.Signals(), Unbilled: byReason(r.Unbilled[:]), SearchClicks: r.Search.Clicks, SearchBillable: r.Search.Billable,
			SearchUnbilled: byReason(r.Search.Unbilled[:]), Spend: r.Spend, Invalidate: v.Selector(r)}
		// Over a median of 0 a site has no ratio: none is given.
		var over *float64
		if v.Median > 0 {
			o := round(r.OverMedian, 2)
			over = &o
		}
		if out.Rank == RankRefused {
			row.MedianRefused, row.RefusedOverMedian = &median, over
		} else {
			row.MedianCTR, row.OverMedian = &median, over
		}
		out.Sites = append(out.Sites, row)
	}
	b, _ := json.Marshal(out) // strings, numbers and maps of them always marshal
	return b
}

// WriteTable writes the review as a table for a terminal: a line of its
// range, rank and median, then a row per site, the worst first, ending
// with the flags of adlink invalidate that select it. x median is the
// ratio of the rank's figure to its median.
func (v *SiteReview) WriteTable(w io.Writer) error {
	if v.rank() == RankRefused {
		fmt.Fprintf(w, "%d sites with at least %d clicks (of pages and search answers) from %s to %s; median refused share %s\n", v.Reviewed, v.MinClicks,
			v.From.Format(time.RFC3339), v.To.Format(time.RFC3339), percent(v.Median))
	} else {
		fmt.Fprintf(w, "%d sites with at least %d impressions from %s to %s; median billable CTR %s\n", v.Reviewed, v.MinImpressions,
			v.From.Format(time.RFC3339), v.To.Format(time.RFC3339), percent(v.Median))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "api_key\tsite_id\timpressions\tclicks\tsearch clicks\tbillable\tbillable CTR\trefused\tx median\tnot_navigation\trepeat\tcaps\ttoo_fast\tinvalidate\t")
	for i := range v.Sites {
		r := &v.Sites[i]
		s := r.Signals()
		sel := v.Selector(r)
		flags := "-api-key " + shellQuote(sel.APIKey) + " -site-id " + shellQuote(sel.SiteID) + " -from " + sel.From + " -to " + sel.To
		if strings.ContainsRune(sel.APIKey+sel.SiteID, 0) {
			flags = "none: a NUL byte cannot be a flag's; POST /admin/invalidate takes it"
		}
		over := "-" // over a median of 0
		if v.Median > 0 {
			over = fmt.Sprintf("%.2f", r.OverMedian)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", cell(r.APIKey), cell(r.SiteID), r.Impressions, r.Clicks,
			r.Search.Clicks, r.Billable, percent(r.CTR), percent(r.RefusedShare), over, percent(s.NotNavigation), percent(s.Repeat),
			percent(s.Caps), percent(s.TooFast), flags)
	}
	return tw.Flush()
}

// cell is an id as the table shows it: as it is, or, when it is empty or
// holds a space or a character that does not print, quoted as Go quotes
// a string, so that a control character in a partner's site id cannot
// act on the terminal it is read in, nor a tab or a line break move the
// columns.
func cell(s string) string {
	if s != "" && printable(s) && !strings.Contains(s, " ") {
		return s
	}
	return strconv.Quote(s)
}

// printable reports whether s is UTF-8 whose every character prints.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

// percent writes a share as a percentage of two decimals.
func percent(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + "%" }

// shellQuote quotes s for a shell unless it needs none: in single quotes,
// or, when s holds a character that does not print, which would act on
// the terminal the table is read in, in $'...' with each byte of such a
// character in octal, as bash, zsh and POSIX.1-2024 shells read it (dash
// reads it as other characters: no site, never another one's). s holds
// no NUL byte.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@+") == "" {
		return s
	}
	if printable(s) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	b := []byte("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\'' || r == '\\':
			b = append(b, '\\', byte(r))
		case (r != utf8.RuneError || n > 1) && unicode.IsPrint(r):
			b = append(b, s[i:i+n]...)
		default:
			for _, c := range []byte(s[i : i+n]) {
				b = append(b, '\\', '0'+c>>6, '0'+c>>3&7, '0'+c&7)
			}
		}
		i += n
	}
	return string(append(b, '\''))
}
