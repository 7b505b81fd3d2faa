package app

import (
	"strings"
	"testing"
)

// TestLongPartnerIDsBill: the clicks of a partner whose api_key and
// site_id are longer than a click records of them (256 bytes) bill: they
// are judged by the key and site the link carries whole, which its
// signature covers, and recorded cut.
func TestLongPartnerIDsBill(t *testing.T) {
	key, site := "k-"+strings.Repeat("a", 300), "s-"+strings.Repeat("b", 300)
	s := startAccounts(t, `{"partners":[{"api_key":"`+key+`","sites":[{"id":"`+site+`","domains":["long.example"]}]}]}`, "")
	c := s.click(t, s.links(t, key, site, "handy-bestkauf.de", 1)[0], 1)
	if !c.Billable || !strings.HasPrefix(key, c.APIKey) || !strings.HasPrefix(site, c.SiteID) || len(c.APIKey) != 256 {
		t.Errorf("a reader's click on a link of a partner with long ids: billable %v (%s), key %d bytes, site %d, want billable with both cut to 256",
			c.Billable, c.Reason, len(c.APIKey), len(c.SiteID))
	}
}
