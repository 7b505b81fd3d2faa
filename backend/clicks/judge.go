package clicks

import "context"

// Judge decides whether clicks are billable: a valid and unexpired sig or
// tok, a browser's user agent, a person's navigation, and room in the
// client network's fraud windows.
type Judge struct {
	// Keys verify sig and tok; without them no click is billable.
	Keys *Keys
	// Windows hold each network's billable clicks; without them (tests of
	// the other checks) there are no repeats and no cap.
	Windows Windows
	// NetworkDailyClicks caps the billable clicks of one client network
	// per UTC day; 0 is no cap.
	NetworkDailyClicks int
}

// Auth is what a click URL carries to prove that adlink made it.
type Auth struct {
	Exp, Sig string // a link the server made
	Tok      string // a link the page made
}

// Judge sets c.Billable and c.Reason from auth, c's parameters, user
// agent, the browser's intent and c's client network, at c.Time. refuse is
// a reason the caller found before (such as ReasonPartner when the api_key
// is no longer known), or "". The reasons are tried in that order and the
// first that applies is c's. Only a click that passes every other check
// is claimed in Windows, so clicks that do not bill spend no window. A
// claim stays if the caller then fails to log the click: that network's
// click on the ad goes unbilled, never billed twice. An error is the
// Windows' failure, and c is then not billable.
func (j *Judge) Judge(ctx context.Context, c *Click, auth Auth, intent Intent, refuse string) error {
	reason := ReasonUnsigned
	if j.Keys != nil {
		switch {
		case auth.Sig != "" || auth.Exp != "":
			p := Params{Type: c.Type, AdID: c.AdID, AdType: c.AdType, APIKey: c.APIKey,
				SiteID: c.SiteID, Criterion: c.Criterion, YkTag: c.YkTag}
			reason = j.Keys.Verify(&p, auth.Exp, auth.Sig, c.Time)
		case auth.Tok != "":
			reason = j.Keys.VerifyToken(c.APIKey, c.SiteID, auth.Tok, c.Time)
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
