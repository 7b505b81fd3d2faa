package clicks

import (
	"context"
	"time"
)

// Judge decides whether clicks are billable: a valid and unexpired sig or
// click token, a browser's user agent, a person's navigation, a decision
// id not used before, and room in the client network's fraud windows.
type Judge struct {
	// Keys verify sig, ct and tok; without them no click is billable.
	Keys *Keys
	// Windows hold each network's billable clicks; without them (tests of
	// the other checks) there are no repeats and no cap.
	Windows Windows
	// Decisions hold the decision ids already clicked; without them (tests
	// of the other checks) a decision bills as often as the windows allow.
	Decisions Decisions
	// NetworkDailyClicks caps the billable clicks of one client network
	// per UTC day; 0 is no cap.
	NetworkDailyClicks int
	// PrefixDailyClicks caps the billable clicks of one IPv6 /48 (Prefix)
	// per UTC day, whichever of its networks they come from; 0 is no cap.
	PrefixDailyClicks int
	// IPv4PrefixDailyClicks is the same cap for one IPv4 /24 (Prefix),
	// whichever of its addresses the clicks come from; 0 is no cap.
	IPv4PrefixDailyClicks int
	// PrefixAdDailyClicks caps the billable clicks of one Prefix, an IPv6
	// /48 or an IPv4 /24, on one ad per UTC day, whichever of its networks
	// they come from: the prefix's daily cap alone lets its holder spend
	// all of it on one advertiser. 0 is no cap.
	PrefixAdDailyClicks int
	// MinClickDelay is how soon after its ad was shown (its click token
	// issued) a click may come and bill: sooner is ReasonTooFast.
	MinClickDelay time.Duration
}

// Auth is what a click URL carries to prove that adlink made it.
type Auth struct {
	D, Exp, Sig string // a link the server made, for one answer (D)
	CT          string // a click token: a link the page made, for an ad a reader saw
	Tok         string // the site token of a link the page made
}

// Use is what a click that passed every check of its own spends of the
// stored state: its decision id, once, and a claim in its network's
// windows. A Use with an empty D spends no decision.
type Use struct {
	D       string
	Expires time.Time // when D stops being billable
	// Limit is the network's cap of billable clicks per UTC day (<= 0: none).
	Limit int
	// PrefixLimit is the cap of the billable clicks of the network's
	// Prefix, its IPv6 /48 or IPv4 /24, per UTC day (<= 0: none); PrefixOf
	// reads it.
	PrefixLimit int
	// IPv4Capped says PrefixLimit is an IPv4 client's /24's, as Check
	// sets it. A Use spooled before IPv4 /24s had a cap has none: its
	// PrefixLimit is the /48's for an IPv4 client too, and that client's
	// /24 is neither checked nor counted, as the replica that judged it
	// did neither.
	IPv4Capped bool
	// PrefixAdLimit is the cap of the billable clicks of the network's
	// Prefix on the click's ad per UTC day (<= 0: none). A Use spooled
	// before prefixes had a cap per ad has none, and the prefix's count on
	// the ad is neither checked nor counted, as the replica that judged it
	// did neither.
	PrefixAdLimit int
	// Budget is what the click's advertiser (Click.Advertiser) may spend
	// on the click's day (BudgetDay), in millionths; 0 is no budget. A click whose
	// advertiser had spent it is ReasonOverBudget and spends nothing else;
	// the spend may pass it by one click's bid.
	Budget int64
	// Currency is Budget's. A click whose bid is in another currency
	// (Click.Currency) is ReasonOverBudget whatever was spent: the budget
	// counts no spend in another currency, and leaves none unbounded. ""
	// (a Use spooled before budgets had a currency) checks none.
	Currency string
	// Zone is the IANA time zone of Budget's day; "" (a Use spooled before
	// budgets had zones) is UTC. It travels with the click, so that one
	// shipped later spends on the day it was judged for.
	Zone string `json:",omitempty"`
}

// PrefixOf is the Prefix of c's address, which its billable clicks are
// counted in under u, and its cap per UTC day (<= 0: none).
func (u Use) PrefixOf(c *Click) (prefix string, limit int) {
	prefix = Prefix(c.IP)
	if IsIPv4Prefix(prefix) && !u.IPv4Capped {
		return prefix, 0
	}
	return prefix, u.PrefixLimit
}

// OtherCurrency reports whether c bids in a currency other than u's
// budget's, and so is over budget before any spend is read.
func (u Use) OtherCurrency(c *Click) bool {
	return u.Budget > 0 && u.Currency != "" && c.Currency != u.Currency
}

// Check sets c.Reason from the checks that need no stored state (auth,
// c's parameters, user agent, the browser's intent), at c.Time, and
// returns the Use the stored checks need: Settle or a Ledger finish the
// judgement. refuse is a reason the caller found before (such as
// ReasonPartner when the api_key is no longer known), or "". The reasons
// are tried in that order and the first that applies is c's. A valid site
// token alone is ReasonUnverified: it proves no ad was shown. A click
// token must have been issued to c's network (Network(c.IP)) and user
// agent.
func (j *Judge) Check(c *Click, auth Auth, intent Intent, refuse string) Use {
	reason := ReasonUnsigned
	var u Use
	if j.Keys != nil {
		p := Params{Type: c.Type, AdID: c.AdID, AdType: c.AdType, APIKey: c.APIKey,
			SiteID: c.SiteID, Criterion: c.Criterion, YkTag: c.YkTag}
		switch {
		case auth.Sig != "" || auth.Exp != "":
			reason = j.Keys.Verify(&p, auth.D, auth.Exp, auth.Sig, c.Time)
			if e, ok := parseExp(auth.Exp); ok {
				u = Use{D: auth.D, Expires: time.Unix(e, 0)}
			}
		case auth.CT != "":
			var claim TokenClaim
			claim, reason = j.Keys.VerifyClickToken(&p, auth.CT, Network(c.IP), c.UserAgent, c.Time, j.MinClickDelay)
			u = Use{D: claim.D, Expires: claim.Expires}
		case auth.Tok != "":
			reason = j.Keys.VerifyToken(c.APIKey, c.SiteID, auth.Tok, c.Time)
			if reason == "" {
				reason = ReasonUnverified
			}
		}
	}
	switch {
	case reason != "":
	case refuse != "":
		reason = refuse
	case IsBot(c.UserAgent):
		reason = ReasonBot
	default:
		reason = intent.Reason(c.UserAgent)
	}
	c.Billable = reason == ""
	c.Reason = reason
	u.Limit, u.PrefixLimit, u.IPv4Capped = j.NetworkDailyClicks, j.PrefixDailyClicks, true
	u.PrefixAdLimit = j.PrefixAdDailyClicks
	if IsIPv4Prefix(Prefix(c.IP)) {
		u.PrefixLimit = j.IPv4PrefixDailyClicks
	}
	return u
}

// Judge checks c as Check does, then settles it with j's Decisions and
// Windows (Settle), without recording it.
func (j *Judge) Judge(ctx context.Context, c *Click, auth Auth, intent Intent, refuse string) error {
	u := j.Check(c, auth, intent, refuse)
	return Settle(ctx, c, u, j.Decisions, j.Windows)
}

// Settle finishes the judgement of a click Check left billable: a click
// whose bid is in another currency than its budget's is ReasonOverBudget
// (Use.OtherCurrency) and spends nothing; else it uses u.D (a used one is
// ReasonRepeat), and only a click with a fresh decision
// is claimed in windows, so clicks that do not bill spend no window. A
// decision used by a click the windows then refuse stays used. A claim or
// use stays if the caller then fails to log the click: that click goes
// unbilled, never billed twice. A nil decisions or windows skips its
// check. An error is the Decisions' or Windows' failure, and c is then not
// billable, with no reason.
func Settle(ctx context.Context, c *Click, u Use, decisions Decisions, windows Windows) error {
	if c.Reason != "" {
		return nil
	}
	if u.OtherCurrency(c) {
		// Before any claim: a click no budget can count spends nothing.
		c.Billable, c.Reason = false, ReasonOverBudget
		return nil
	}
	fail := func(err error) error {
		c.Billable, c.Reason = false, ""
		return err
	}
	if u.D != "" && decisions != nil {
		first, err := decisions.Use(ctx, u.D, c.Time, u.Expires)
		if err != nil {
			return fail(err)
		}
		if !first {
			c.Billable, c.Reason = false, ReasonRepeat
			return nil
		}
	}
	if windows != nil {
		reason, err := windows.Claim(ctx, claimOf(c, u))
		if err != nil {
			return fail(err)
		}
		c.Billable, c.Reason = reason == "", reason
	}
	return nil
}
