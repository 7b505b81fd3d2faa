(() => {
	const t = adlink.timing, out = Object.assign({first_ad: t.firstAd - t.start}, t.steps);
	for (const e of performance.getEntriesByType("resource")) {
		const path = new URL(e.name).pathname;
		const k = {"/v2/page/link": "page_link", "/v2/shards": "manifest", "/matcher.wasm": "module"}[path] ||
			(path.startsWith("/v2/shards/") ? "shard" : "");
		if (!k || e.startTime < t.start) continue;
		out[k + ".sent"] = e.startTime - t.start;
		out[k + ".ttfb"] = e.responseStart - t.start;
		out[k + ".end"] = e.responseEnd - t.start;
	}
	return out;
})()
