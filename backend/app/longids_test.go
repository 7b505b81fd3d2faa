package app

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestLongPartnerIDsBill: the clicks of a partner whose api_key and
// site_id are longer than a click records of a key no partner has (256
// bytes) bill: they are judged by the key and site the link carries
// whole, which its signature covers. They are recorded whole too, as the
// partner's impressions are, so the partner's report, which takes the
// clicks of its whole key, counts them.
func TestLongPartnerIDsBill(t *testing.T) {
	key, site := "k-"+strings.Repeat("a", 300), "s-"+strings.Repeat("b", 300)
	s := startAccounts(t, `{"partners":[{"api_key":"`+key+`","report_token":"long-ids-report-token-0123","sites":[{"id":"`+site+`","domains":["long.example"]}]}]}`, "")
	c := s.click(t, s.links(t, key, site, "handy-bestkauf.de", 1)[0], 1)
	if !c.Billable || c.APIKey != key || c.SiteID != site {
		t.Errorf("a reader's click on a link of a partner with long ids: billable %v (%s), key %d bytes, site %d, want billable with both whole",
			c.Billable, c.Reason, len(c.APIKey), len(c.SiteID))
	}
	status, body := s.get(t, "/v2/report", http.Header{"Authorization": {"Bearer long-ids-report-token-0123"}})
	var r struct {
		Rows []struct {
			Clicks int `json:"clicks"`
		} `json:"rows"`
	}
	err := json.Unmarshal([]byte(body), &r)
	n := 0
	for _, row := range r.Rows {
		n += row.Clicks
	}
	if status != http.StatusOK || err != nil || n != 1 {
		t.Errorf("the partner's report: %d %v %.300s, want its click", status, err, body[len(body)-min(len(body), 600):])
	}
}
