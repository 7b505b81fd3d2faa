package api

import (
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

// bidCurrency is the currency a click on ad, or its impression, records
// its bid in (catalog.ClickCurrency).
func bidCurrency(ad *match.Ad) string { return catalog.ClickCurrency(ad) }
