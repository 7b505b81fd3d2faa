package catalog

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// A Merchant Center feed may carry attributes of the merchant's own, so an
// attribute adlink does not read never refuses it; but a misspelt one
// (salesprice) would lose what it says without a word. Each name that is
// neither an attribute adlink reads nor one of Google's is reported once
// per read, with the attribute it most likely misspells: the first
// MaxErrors of them, and how many more, so that a feed with a new name in
// each column or item neither floods the log and the reload's answer nor
// spends a guess on each.

// merchantReadAttrs are the attributes merchantItem.set reads, in the
// order a misspelling's likeliest meaning is looked for.
var merchantReadAttrs = []string{
	"id", "title", "description", "link", "image_link", "price", "sale_price", "sale_price_effective_date",
	"availability", "brand", "gtin", "mpn", "google_product_category", "product_type", "condition",
	"expiration_date", "pause", "adult", "multipack", "is_bundle", "item_group_id", "ads_redirect",
	"excluded_destination",
}

// googleAttrs are the Merchant Center attributes adlink has no use for,
// skipped without a word.
var googleAttrs = map[string]bool{}

// merchantCandidates are what a misspelt name may mean: the attributes
// adlink reads first, then Google's others in order.
var merchantCandidates []string

func init() {
	for _, a := range strings.Fields(`additional_image_link lifestyle_image_link mobile_link canonical_link
		virtual_model_link link_template mobile_link_template availability_date cost_of_goods_sold
		unit_pricing_measure unit_pricing_base_measure installment subscription_cost loyalty_program
		auto_pricing_min_price minimum_price maximum_retail_price identifier_exists age_group color gender
		material pattern size size_type size_system energy_efficiency_class min_energy_efficiency_class
		max_energy_efficiency_class product_detail product_highlight product_length product_width
		product_height product_weight ads_grouping ads_labels custom_label_0 custom_label_1 custom_label_2
		custom_label_3 custom_label_4 promotion_id shopping_ads_excluded_country included_destination
		shipping shipping_label shipping_weight shipping_length shipping_width shipping_height
		ships_from_country transit_time_label max_handling_time min_handling_time free_shipping_threshold
		free_shipping_limit tax tax_category certification external_seller_id short_title
		structured_title structured_description pickup_method pickup_sla store_code
		sell_on_google_quantity return_policy_label disclosure_date feed_label consumer_notice product_fee
		content_language target_country channel offer_id display_ads_id display_ads_similar_id
		display_ads_title display_ads_link display_ads_value`) {
		googleAttrs[a] = true
	}
	merchantCandidates = append(slices.Clone(merchantReadAttrs), slices.Sorted(maps.Keys(googleAttrs))...)
}

// merchantKnown reports whether name, as merchantToken writes it, is an
// attribute adlink reads or one of Google's; a sub-attribute's header
// ("shipping(country:price)") is its attribute's.
func merchantKnown(name string) bool {
	name, _, _ = strings.Cut(name, "(")
	return googleAttrs[name] || new(merchantItem).set(name, "")
}

// unknownAttr reports name, an attribute of line that adlink does not
// read, to Options.Warn when it is none of Google's either, once a read.
func (p *parser) unknownAttr(line int, name string) {
	if p.opts.Warn == nil || name == "" || p.unknown[name] || merchantKnown(name) {
		return
	}
	if p.unknown == nil {
		p.unknown = make(map[string]bool)
	}
	p.unknown[name] = true
	if len(p.unknown) > MaxErrors {
		if p.unknownLeft == 0 {
			p.unknownLeftLine = line
		}
		p.unknownLeft++
		return
	}
	msg := "not an attribute adlink reads, so skipped"
	if m := merchantMeant(name); m != "" {
		msg += ": did you mean " + m + "?"
	}
	p.opts.Warn(&LineError{File: p.name, Line: line, Field: name, Msg: msg})
}

// unknownLeftOut tells Options.Warn how many unknown attributes past the
// first MaxErrors were not named, on the line the first of them is on.
func (p *parser) unknownLeftOut() {
	if p.unknownLeft > 0 {
		p.opts.Warn(&LineError{File: p.name, Line: p.unknownLeftLine,
			Msg: fmt.Sprintf("%d more attributes that adlink does not read, skipped and not named", p.unknownLeft)})
	}
}

// bareName is an attribute's name without its separators.
var bareName = strings.NewReplacer("_", "", "-", "", " ", "", ".", "")

// merchantMeant is the attribute name most likely misspells, or "" when
// none is close: written the same but for its separators, or a letter or
// two off (one for a short name).
func merchantMeant(name string) string {
	n := bareName.Replace(name)
	most := 2
	if len(n) <= 4 {
		most = 1
	}
	best, bestD := "", most+1
	for _, a := range merchantCandidates {
		if d := editDistance(n, bareName.Replace(a)); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b, in
// bytes: insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 1 << 10 // no attribute is that long
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
