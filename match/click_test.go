package match

import "net/url"

// clickQuery returns a LinkOptions.ClickQuery hook that writes the seed's
// click URL query as package contract does; match's tests cannot import
// contract, which imports match.
func clickQuery(context, apiKey, siteID, ykTag string) func(dst []byte, adID, adType, criterion string) []byte {
	return func(dst []byte, adID, adType, criterion string) []byte {
		dst = append(dst, "type="+url.QueryEscape(context)+"&adId="+url.QueryEscape(adID)+
			"&adType="+url.QueryEscape(adType)+"&api_key="+url.QueryEscape(apiKey)+"&site_id="+url.QueryEscape(siteID)+
			"&criterionId="+url.QueryEscape(criterion)...)
		if ykTag != "" {
			dst = append(dst, "&yk_tag="+url.QueryEscape(ykTag)...)
		}
		return dst
	}
}
