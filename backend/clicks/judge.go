package clicks

import (
	"context"
	"time"
)

// Judge decides whether clicks are billable: a valid and unexpired sig, a
// browser's user agent, a person's navigation, a decision id not used
// before, and room in the client network's fraud windows.
type Judge struct {
	// Keys verify sig and tok; without them no click is billable.
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
}

// Auth is what a click URL carries to prove that adlink made it.
type Auth struct {
	D, Exp, Sig string // a link the server made, for one answer (D)
	Tok         string // a link the page made
}

// Judge sets c.Billable and c.Reason from auth, c's parameters, user
// agent, the browser's intent, auth's decision id and c's client network,
// at c.Time. refuse is a reason the caller found before (such as
// ReasonPartner when the api_key is no longer known), or "". The reasons
// are tried in that order and the first that applies is c's. A valid site
// token alone is ReasonUnverified: it proves no ad was shown. A click that
// passes every check before them uses its decision id, and a used one is
// ReasonRepeat; only a click with a fresh decision is claimed in Windows,
// so clicks that do not bill spend no window. A decision used by a click
// the windows then refuse stays used. A claim or use stays if the caller
// then fails to log the click: that click goes unbilled, never billed
// twice. An error is the Decisions' or Windows' failure, and c is then not
// billable.
func (j *Judge) Judge(ctx context.Context, c *Click, auth Auth, intent Intent, refuse string) error {
	reason := ReasonUnsigned
	signed := false
	if j.Keys != nil {
		switch {
		case auth.Sig != "" || auth.Exp != "":
			p := Params{Type: c.Type, AdID: c.AdID, AdType: c.AdType, APIKey: c.APIKey,
				SiteID: c.SiteID, Criterion: c.Criterion, YkTag: c.YkTag}
			reason = j.Keys.Verify(&p, auth.D, auth.Exp, auth.Sig, c.Time)
			signed = true
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
		reason = intent.Reason()
	}
	if reason == "" && signed && j.Decisions != nil {
		// Verify read exp, so it parses.
		e, _ := parseExp(auth.Exp)
		first, err := j.Decisions.Use(ctx, auth.D, c.Time, time.Unix(e, 0))
		if err != nil {
			c.Billable, c.Reason = false, ""
			return err
		}
		if !first {
			reason = ReasonRepeat
		}
	}
	if reason == "" && j.Windows != nil {
		var err error
		reason, err = j.Windows.Claim(ctx, Network(c.IP), c.AdID, c.Time, j.NetworkDailyClicks)
		if err != nil {
			c.Billable, c.Reason = false, ""
			return err
		}
	}
	c.Billable = reason == ""
	c.Reason = reason
	return nil
}
