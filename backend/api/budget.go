package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
)

// CodeNotAdvertiser: a request only an advertiser's report token may make
// (GET /v2/budget) with a partner's (403).
const CodeNotAdvertiser = "not_an_advertiser"

// BudgetDays is how many days back GET /v2/budget's day may go. The
// retention keeps the spend of that many days and more
// (retention.DefaultSpendDays).
const BudgetDays = 31

// The statuses of a budget's day.
const (
	// BudgetActive: the day's spend is below the budget; its ads run.
	BudgetActive = "active"
	// BudgetSpent: the day's spend reached the budget; its ads are out of
	// answers until the next local midnight.
	BudgetSpent = "spent"
	// NoBudget: the advertiser has no daily budget; the spend only.
	NoBudget = "no_budget"
)

// budgetDay is the answer of GET /v2/budget.
type budgetDay struct {
	Account     accounts.Account `json:"account"`
	Day         string           `json:"day"`
	Timezone    string           `json:"timezone"`
	Currency    *string          `json:"currency"`
	DailyBudget *string          `json:"daily_budget"`
	Spent       string           `json:"spent"`
	Pacing      *string          `json:"pacing"`
	Status      string           `json:"status"`
	ResetsAt    string           `json:"resets_at"`
}

// budgetRequest answers GET /v2/budget: the daily budget of the
// advertiser whose report token the Authorization header carries, and
// what it spent on a day of it, today's in its time zone unless day names
// an earlier one. The spend is read from the store the ledger bills
// against, as the budget gate's is, so it is what the ledger holds and
// every replica sharing the store answers alike. Authorised, limited and
// kept from caches and other origins as /v2/report is.
func (s *server) budgetRequest(w http.ResponseWriter, r *http.Request) error {
	var problems []report.Problem
	acc, get, err := s.accountRequest(w, r, &problems)
	if err != nil {
		return err
	}
	dayParam, format := get("day"), get("format")
	if acc.Kind != accounts.Advertiser {
		return &Error{Status: http.StatusForbidden, Code: CodeNotAdvertiser,
			Message: "a budget is an advertiser's: this is a " + string(acc.Kind) + "'s report token, whose spend /v2/report gives"}
	}
	book, err := s.accountsIn(r.Context())
	if err != nil {
		return err
	}
	b, budgeted := book.Budget(acc.ID)
	loc, err := clicks.LoadZone(b.Zone)
	if err != nil {
		return internal(fmt.Errorf("budget: the time zone of %s: %w", acc.ID, err))
	}
	now := s.now()
	today := clicks.BudgetDayIn(now, loc)
	day := today
	if dayParam != "" {
		d, msg := parseBudgetDay(dayParam, today)
		if msg != "" {
			problems = append(problems, report.Problem{Param: "day", Message: msg})
		}
		day = d
	}
	if format != "" && format != "json" {
		problems = append(problems, report.Problem{Param: "format", Message: "format must be json, not " + strconv.Quote(format)})
	}
	if err := reportProblems(problems); err != nil {
		return err
	}
	if s.spend == nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeInternal,
			Message: "budgets are not available here", Err: errors.New("no spend store")}
	}
	spent, err := s.spend.SpentOn(r.Context(), acc.ID, day)
	if err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeReportsUnavailable, RetryAfter: reportRetry,
			Message: "the budgets' store did not answer", Err: fmt.Errorf("budget: %w", err)}
	}
	a := budgetDay{Account: acc, Day: dayDate(day), Timezone: loc.String(), Spent: report.Spend(spent),
		Status: NoBudget, ResetsAt: (day + 1).Start(loc).Format(time.RFC3339)}
	if budgeted {
		daily, pacing := report.Spend(b.DailyMicros), string(b.Pacing)
		a.Currency, a.DailyBudget, a.Pacing = &b.Currency, &daily, &pacing
		a.Status = BudgetActive
		if spent >= b.DailyMicros {
			a.Status = BudgetSpent
		}
	}
	body, err := json.Marshal(a)
	if err != nil {
		return internal(err)
	}
	w.Header().Set("X-Adlink-Timezone", a.Timezone)
	respond(w, http.StatusOK, body, "")
	return nil
}

// parseBudgetDay reads v, a date YYYY-MM-DD, as a budget day from today
// back BudgetDays days, or says what is wrong with it.
func parseBudgetDay(v string, today clicks.BudgetDay) (clicks.BudgetDay, string) {
	t, err := time.Parse(time.DateOnly, v)
	if err != nil || t.Format(time.DateOnly) != v {
		return today, "day must be a date written YYYY-MM-DD, not " + strconv.Quote(v)
	}
	d := clicks.BudgetDayIn(t, time.UTC)
	switch {
	case d > today:
		return today, "day " + v + " is after today, " + dayDate(today) + ", in the budget's time zone"
	case d < today-BudgetDays:
		return today, "day goes back at most " + strconv.Itoa(BudgetDays) + " days, to " + dayDate(today-BudgetDays) + ", not to " + v
	}
	return d, ""
}

// dayDate writes d as its date, YYYY-MM-DD.
func dayDate(d clicks.BudgetDay) string {
	return time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly)
}
